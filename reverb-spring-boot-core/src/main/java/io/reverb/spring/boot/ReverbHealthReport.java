package io.reverb.spring.boot;

import io.reverb.rpc.RpcChannel;
import io.reverb.services.health.HealthCheckResponse.ServingStatus;
import io.reverb.services.health.HealthStatusManager;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * What Actuator's {@code reverb} health contributor reports, computed without Actuator's types: Actuator's health API
 * moved packages between Spring Boot 3.x ({@code org.springframework.boot.actuate.health}) and 4
 * ({@code org.springframework.boot.health.contributor}), so each starter's indicator only copies this report's status
 * code and details into its own line's {@code Health.Builder}.
 *
 * <ul>
 *   <li>{@value #UP} while the server runs and its health service reports the whole server and every service SERVING;</li>
 *   <li>{@value #DOWN} when one of them is NOT_SERVING (set by the application on the {@link HealthStatusManager} bean,
 *   by readiness, or at shutdown), or when the server has services but is not running;</li>
 *   <li>{@value #UNKNOWN} when a status is UNKNOWN.</li>
 * </ul>
 *
 * Details: the server's address, each service's status, and each channel's connectivity state (which does not change
 * the status: a peer that is down is that peer's health, not this application's).
 *
 * @param status  Actuator's status code: {@value #UP}, {@value #DOWN} or {@value #UNKNOWN}.
 * @param details the details, in order (unmodifiable).
 */
public record ReverbHealthReport(String status, Map<String, Object> details)
{
    /** Actuator's {@code Status.UP} code. */
    public static final String UP = "UP";
    /** Actuator's {@code Status.DOWN} code. */
    public static final String DOWN = "DOWN";
    /** Actuator's {@code Status.UNKNOWN} code. */
    public static final String UNKNOWN = "UNKNOWN";

    /**
     * @param status  the status code.
     * @param details the details.
     */
    public ReverbHealthReport
    {
        details = Collections.unmodifiableMap(new LinkedHashMap<>(details));
    }

    /**
     * @param server   the server, or null when there is none.
     * @param health   the health service's state, or null when there is none.
     * @param channels the channels, or null.
     * @return the report as of now.
     */
    public static ReverbHealthReport of(
        final ReverbServerLifecycle server, final HealthStatusManager health, final ReverbChannelFactory channels)
    {
        String status = UP;
        final Map<String, Object> details = new LinkedHashMap<>();
        if (server != null && server.hasServices())
        {
            final String address = server.address();
            if (address == null)
            {
                status = DOWN;
                details.put("server", "not running");
            }
            else
            {
                details.put("address", address);
                if (health != null)
                {
                    final ServingStatus all = health.status(HealthStatusManager.SERVICE_NAME_ALL_SERVICES);
                    status = worse(status, all);
                    details.put("server", String.valueOf(all));
                    final Map<String, String> services = new LinkedHashMap<>();
                    for (final String name : server.serviceNames())
                    {
                        final ServingStatus s = health.status(name);
                        services.put(name, String.valueOf(s));
                        status = worse(status, s);
                    }
                    details.put("services", services);
                }
            }
        }
        if (channels != null && !channels.channels().isEmpty())
        {
            final Map<String, String> states = new LinkedHashMap<>();
            for (final Map.Entry<String, RpcChannel> e : channels.channels().entrySet())
            {
                states.put(e.getKey(), String.valueOf(e.getValue().state(false)));
            }
            details.put("channels", states);
        }
        return new ReverbHealthReport(status, details);
    }

    private static String worse(final String current, final ServingStatus s)
    {
        if (s == null || s == ServingStatus.SERVING)
        {
            return current;
        }
        if (s == ServingStatus.UNKNOWN)
        {
            return DOWN.equals(current) ? current : UNKNOWN;
        }
        return DOWN;
    }
}
