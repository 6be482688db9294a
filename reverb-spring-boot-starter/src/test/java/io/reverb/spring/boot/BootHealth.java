package io.reverb.spring.boot;

import java.util.Map;
import org.springframework.boot.health.actuate.endpoint.HealthEndpoint;
import org.springframework.boot.health.autoconfigure.actuate.endpoint.HealthEndpointAutoConfiguration;
import org.springframework.boot.health.autoconfigure.contributor.HealthContributorAutoConfiguration;
import org.springframework.boot.health.autoconfigure.registry.HealthContributorRegistryAutoConfiguration;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.context.ApplicationContext;

/**
 * Actuator's health API as Spring Boot 4 has it (the spring-boot-health module), for the tests shared with the Boot 3.5
 * starter (reverb-spring-boot-core's src/sharedTest): that starter has a class of this name over Boot 3.5's API.
 */
final class BootHealth
{
    private BootHealth()
    {
    }

    /** @return the auto-configurations that make Actuator's health endpoint. */
    static Class<?>[] endpointAutoConfigurations()
    {
        return new Class<?>[] {HealthContributorAutoConfiguration.class, HealthContributorRegistryAutoConfiguration.class,
            HealthEndpointAutoConfiguration.class};
    }

    /** @return the status code of the {@code reverbHealthIndicator} bean's report. */
    static String indicatorStatus(final ApplicationContext context)
    {
        return context.getBean("reverbHealthIndicator", HealthIndicator.class).health().getStatus().getCode();
    }

    /** @return the details of the {@code reverbHealthIndicator} bean's report. */
    static Map<String, Object> indicatorDetails(final ApplicationContext context)
    {
        return context.getBean("reverbHealthIndicator", HealthIndicator.class).health().getDetails();
    }

    /** @return the status code of the health endpoint's path (null: the whole application). */
    static String endpointStatus(final ApplicationContext context, final String path)
    {
        final HealthEndpoint endpoint = context.getBean(HealthEndpoint.class);
        return (path == null ? endpoint.health() : endpoint.healthForPath(path)).getStatus().getCode();
    }
}
