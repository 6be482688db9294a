package io.reverb.spring.boot;

import io.reverb.services.health.HealthCheckResponse.ServingStatus;
import io.reverb.services.health.HealthStatusManager;
import org.springframework.boot.availability.AvailabilityChangeEvent;
import org.springframework.boot.availability.ReadinessState;
import org.springframework.context.ApplicationListener;

/**
 * Carries the application's readiness (Spring Boot's {@link ReadinessState}) into Reverb's health service: the whole
 * server ({@value HealthStatusManager#SERVICE_NAME_ALL_SERVICES}) is SERVING while the application accepts traffic and
 * NOT_SERVING while it refuses it, so that balancing clients that health-check it follow the readiness probe. With
 * Spring Boot's {@code ApplicationAvailability} in the context the server starts NOT_SERVING, until the first
 * ACCEPTING_TRAFFIC ({@link ReverbServerLifecycle}).
 */
public class ReverbReadiness implements ApplicationListener<AvailabilityChangeEvent<ReadinessState>>
{
    private final HealthStatusManager health;

    /**
     * @param health the health service's state.
     */
    public ReverbReadiness(final HealthStatusManager health)
    {
        this.health = health;
    }

    @Override
    public void onApplicationEvent(final AvailabilityChangeEvent<ReadinessState> event)
    {
        health.setStatus(HealthStatusManager.SERVICE_NAME_ALL_SERVICES,
            event.getState() == ReadinessState.ACCEPTING_TRAFFIC ? ServingStatus.SERVING : ServingStatus.NOT_SERVING);
    }
}
