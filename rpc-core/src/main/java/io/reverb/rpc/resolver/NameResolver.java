package io.reverb.rpc.resolver;

import io.reverb.rpc.Status;
import java.net.URI;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;

/**
 * Turns a channel's target into transport addresses, and keeps them up to date. Created by a
 * {@link NameResolverProvider} for the target's scheme.
 *
 * <p>Contract: after {@link #start(Listener)} the resolver calls its listener serially, never concurrently with
 * itself, with the full current address list each time (not a delta). {@link #refresh()} asks for a new
 * resolution soon (the channel calls it when a connection fails); resolvers may rate-limit it.
 */
public interface NameResolver
{
    /**
     * Starts resolving; the listener hears the first result (or error) asynchronously.
     *
     * @param listener told of each result.
     */
    void start(Listener listener);

    /**
     * Asks for a new resolution (a hint; may be coalesced or rate-limited).
     */
    void refresh();

    /**
     * Stops resolving; the listener hears nothing afterwards (a resolution already running may still finish
     * without being delivered).
     */
    void shutdown();

    /**
     * Hears a resolver's results.
     */
    interface Listener
    {
        /**
         * @param addresses transport addresses ({@code tcp://}, {@code shm://}, ...), possibly empty.
         */
        void onAddresses(List<URI> addresses);

        /**
         * @param error why resolution failed (UNAVAILABLE); the resolver retries by itself.
         */
        void onError(Status error);
    }

    /**
     * Settings a channel passes to the resolvers it creates.
     *
     * @param scheduler          runs resolutions (they may block, e.g. DNS) and the refresh timers.
     * @param refreshInterval    how often to re-resolve while running.
     * @param minRefreshInterval the shortest gap between two resolutions asked for by {@link #refresh()}.
     */
    record Args(Scheduler scheduler, Duration refreshInterval, Duration minRefreshInterval)
    {
        /**
         * Validates.
         */
        public Args
        {
            Objects.requireNonNull(scheduler, "scheduler");
            if (refreshInterval.isNegative() || refreshInterval.isZero())
            {
                throw new IllegalArgumentException("refreshInterval must be positive: " + refreshInterval);
            }
            if (minRefreshInterval.isNegative())
            {
                throw new IllegalArgumentException("minRefreshInterval must not be negative: " + minRefreshInterval);
            }
        }

        /**
         * @return boundedElastic scheduler (DNS lookups block), refresh every 30 s, at most once a second on demand.
         */
        public static Args defaults()
        {
            return new Args(Schedulers.boundedElastic(), Duration.ofSeconds(30), Duration.ofSeconds(1));
        }
    }
}
