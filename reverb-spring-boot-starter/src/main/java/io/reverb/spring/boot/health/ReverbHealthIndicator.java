package io.reverb.spring.boot.health;

import io.reverb.rpc.ConnectivityState;
import io.reverb.rpc.RpcChannel;
import io.reverb.services.health.HealthCheckResponse.ServingStatus;
import io.reverb.services.health.HealthStatusManager;
import io.reverb.spring.boot.ReverbChannelFactory;
import io.reverb.spring.boot.ReverbServerLifecycle;
import java.util.LinkedHashMap;
import java.util.Map;
import org.springframework.boot.health.contributor.AbstractHealthIndicator;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.Status;

/**
 * Actuator's view of Reverb ({@code /actuator/health/reverb}): what Reverb's health service tells its clients.
 *
 * <ul>
 *   <li>UP while the server runs and its health service reports the whole server and every service SERVING;</li>
 *   <li>DOWN when one of them is NOT_SERVING (set by the application on the {@link HealthStatusManager} bean, by
 *   readiness, or at shutdown), or when the server has services but is not running;</li>
 *   <li>UNKNOWN when a status is UNKNOWN.</li>
 * </ul>
 *
 * Details: the server's address, each service's status, and each channel's connectivity state (which does not change
 * the status: a peer that is down is that peer's health, not this application's).
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
        Status status = Status.UP;
        if (server != null && server.hasServices())
        {
            final String address = server.address();
            if (address == null)
            {
                status = Status.DOWN;
                builder.withDetail("server", "not running");
            }
            else
            {
                builder.withDetail("address", address);
                if (health != null)
                {
                    final Map<String, String> services = new LinkedHashMap<>();
                    status = worse(status, health.status(HealthStatusManager.SERVICE_NAME_ALL_SERVICES));
                    builder.withDetail("server", String.valueOf(health.status(HealthStatusManager.SERVICE_NAME_ALL_SERVICES)));
                    for (final String name : server.serviceNames())
                    {
                        final ServingStatus s = health.status(name);
                        services.put(name, String.valueOf(s));
                        status = worse(status, s);
                    }
                    builder.withDetail("services", services);
                }
            }
        }
        if (channels != null && !channels.channels().isEmpty())
        {
            final Map<String, String> states = new LinkedHashMap<>();
            for (final Map.Entry<String, RpcChannel> e : channels.channels().entrySet())
            {
                final ConnectivityState state = e.getValue().state(false);
                states.put(e.getKey(), String.valueOf(state));
            }
            builder.withDetail("channels", states);
        }
        builder.status(status);
    }

    private static Status worse(final Status current, final ServingStatus s)
    {
        if (s == null || s == ServingStatus.SERVING)
        {
            return current;
        }
        if (s == ServingStatus.UNKNOWN)
        {
            return current == Status.DOWN ? current : Status.UNKNOWN;
        }
        return Status.DOWN;
    }
}
