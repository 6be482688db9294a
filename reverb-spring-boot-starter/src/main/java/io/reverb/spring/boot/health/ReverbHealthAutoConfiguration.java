package io.reverb.spring.boot.health;

import io.reverb.services.health.HealthStatusManager;
import io.reverb.spring.boot.ReverbAutoConfiguration;
import io.reverb.spring.boot.ReverbChannelFactory;
import io.reverb.spring.boot.ReverbServerLifecycle;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.health.autoconfigure.contributor.ConditionalOnEnabledHealthIndicator;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.context.annotation.Bean;

/**
 * Reverb's health in Actuator's health endpoint (contributor {@code reverb}; {@code management.health.reverb.enabled}
 * turns it off), with Spring Boot 4's spring-boot-health module on the class path.
 */
@AutoConfiguration(after = ReverbAutoConfiguration.class)
@ConditionalOnClass({HealthIndicator.class, ConditionalOnEnabledHealthIndicator.class})
@ConditionalOnEnabledHealthIndicator("reverb")
public class ReverbHealthAutoConfiguration
{
    /**
     * @param server   the server, if any.
     * @param health   the health service's state, if any.
     * @param channels the channels, if any.
     * @return the indicator.
     */
    @Bean
    @ConditionalOnMissingBean(name = "reverbHealthIndicator")
    public ReverbHealthIndicator reverbHealthIndicator(
        final ObjectProvider<ReverbServerLifecycle> server, final ObjectProvider<HealthStatusManager> health,
        final ObjectProvider<ReverbChannelFactory> channels)
    {
        return new ReverbHealthIndicator(server.getIfAvailable(), health.getIfAvailable(), channels.getIfAvailable());
    }
}
