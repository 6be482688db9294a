package io.reverb.spring.boot.health;

import io.reverb.services.health.HealthStatusManager;
import io.reverb.spring.boot.ReverbChannelFactory;
import io.reverb.spring.boot.ReverbHealthReport;
import io.reverb.spring.boot.ReverbServerLifecycle;
import org.springframework.boot.health.contributor.AbstractHealthIndicator;
import org.springframework.boot.health.contributor.Health;

/**
 * Actuator's view of Reverb ({@code /actuator/health/reverb}) on Spring Boot 4: what Reverb's health service tells its
 * clients, as {@link ReverbHealthReport} computes it (UP, DOWN or UNKNOWN, with the server's address, each service's
 * status and each channel's connectivity state as details).
 */
public class ReverbHealthIndicator extends AbstractHealthIndicator
{
    private final ReverbServerLifecycle server;
    private final HealthStatusManager health;
    private final ReverbChannelFactory channels;

    /**
     * @param server   the server, or null when there is none.
     * @param health   the health service's state, or null when there is none.
     * @param channels the channels, or null.
     */
    public ReverbHealthIndicator(
        final ReverbServerLifecycle server, final HealthStatusManager health, final ReverbChannelFactory channels)
    {
        super("Reverb health check failed");
        this.server = server;
        this.health = health;
        this.channels = channels;
    }

    @Override
    protected void doHealthCheck(final Health.Builder builder)
    {
        final ReverbHealthReport report = ReverbHealthReport.of(server, health, channels);
        builder.status(report.status()).withDetails(report.details());
    }
}
