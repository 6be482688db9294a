package io.reverb.spring.boot;

import java.util.Map;
import org.springframework.boot.actuate.autoconfigure.health.HealthContributorAutoConfiguration;
import org.springframework.boot.actuate.autoconfigure.health.HealthEndpointAutoConfiguration;
import org.springframework.boot.actuate.health.HealthEndpoint;
import org.springframework.boot.actuate.health.HealthIndicator;
import org.springframework.context.ApplicationContext;

/**
 * Actuator's health API as Spring Boot 3.5 has it (spring-boot-actuator), for the tests shared with the Boot 4 starter
 * (reverb-spring-boot-core's src/sharedTest): that starter has a class of this name over Boot 4's API.
 */
final class BootHealth
{
    private BootHealth()
    {
    }

    /** @return the auto-configurations that make Actuator's health endpoint. */
    static Class<?>[] endpointAutoConfigurations()
    {
        return new Class<?>[] {HealthContributorAutoConfiguration.class, HealthEndpointAutoConfiguration.class};
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
