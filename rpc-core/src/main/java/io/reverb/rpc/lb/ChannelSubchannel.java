package io.reverb.rpc.lb;

import io.reverb.rpc.ConnectivityState;
import com.google.protobuf.Int32Value;
import io.reverb.rpc.CallOptions;
import io.reverb.rpc.Status;
import io.reverb.rpc.StatusCode;
import io.reverb.rpc.health.HealthProtocol;
import io.reverb.rpc.internal.SubchannelConnector;
import java.net.URI;
import java.util.concurrent.Executor;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import reactor.core.Disposable;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Scheduler;

/**
 * A {@link Subchannel}: the connection to one address, through its connector ({@link SubchannelConnector},
 * which connects, reconnects with backoff, keeps alive and drains on GOAWAY). Its state comes from:
 * <ul>
 * <li>with health checking: a {@code reverb.health.v1.Health/Watch} stream on the connector; READY while it says
 * SERVING, TRANSIENT_FAILURE when it says otherwise or the stream fails (then watched again after a backoff);
 * a replica without the health service (UNIMPLEMENTED) counts as SERVING;</li>
 * <li>without: READY once asked to connect, until a call finds the replica unreachable
 * ({@link #onUnreachable}), then TRANSIENT_FAILURE for a backoff;</li>
 * <li>in both: IDLE when a call was refused by GOAWAY ({@link #onGoAway()}).</li>
 * </ul>
 * State changes are made on the balancer's serializing executor.
 */
final class ChannelSubchannel implements Subchannel
{
    /** The status of the last attempt that found the replica unreachable (any thread). */
    private volatile Status lastFailure;
    private static final long MIN_BACKOFF_NANOS = TimeUnit.MILLISECONDS.toNanos(50);
    private static final long MAX_BACKOFF_NANOS = TimeUnit.SECONDS.toNanos(5);

    private final URI address;
    private final SubchannelStateListener listener;
    private final SubchannelLoad load = SubchannelLoad.withDefaults();
    private final Function<URI, SubchannelConnector> connectorFactory;
    private final Executor serializer;
    private final Scheduler timer;
    private final String healthService;
    private final SubchannelReadiness readiness;
    /** The channel's subchannels: told when this one is retired, asked whether another is READY. */
    private final SubchannelRegistry registry;
    private boolean retiredTold;

    // read from any thread, written on the serializer
    private volatile ConnectivityState state = ConnectivityState.IDLE;
    private volatile SubchannelConnector connector;
    private volatile boolean shutdown;
    // serializer only
    private Disposable watch;
    private Disposable retry;
    private long backoffNanos = MIN_BACKOFF_NANOS;
    private int generation;

    ChannelSubchannel(final URI address, final SubchannelStateListener listener,
        final Function<URI, SubchannelConnector> connectorFactory, final Executor serializer, final Scheduler timer,
        final String healthService, final SubchannelRegistry registry)
    {
        this.registry = registry;
        this.address = address;
        this.listener = listener;
        this.connectorFactory = connectorFactory;
        this.serializer = serializer;
        this.timer = timer;
        this.healthService = healthService;
        this.readiness = new SubchannelReadiness(healthService != null);
    }

    @Override
    public URI address()
    {
        return address;
    }

    @Override
    public ConnectivityState state()
    {
        return state;
    }

    @Override
    public SubchannelLoad load()
    {
        return load;
    }

    /**
     * @return the connector to start calls on (null only before the first {@link #requestConnection()}).
     */
    SubchannelConnector connector()
    {
        return connector;
    }

    /**
     * @return the fabric of this subchannel's connection while it takes calls, else null.
     */
    String fabric()
    {
        final SubchannelConnector current = connector;
        return current == null ? null : current.fabric();
    }

    @Override
    public void requestConnection()
    {
        if (shutdown || state != ConnectivityState.IDLE)
        {
            return;
        }
        if (connector == null)
        {
            final SubchannelConnector made = connectorFactory.apply(address);
            made.onConnectFailed(status ->
            {
                lastFailure = status;
                serializer.execute(() -> onConnectFailed(status));
            });
            connector = made;
        }
        connect();
    }

    private void connect()
    {
        generation++;
        dispose();
        update(readiness.onTransportState(ConnectivityState.CONNECTING));
        if (healthService == null)
        {
            // nothing to wait for: the connector connects on the first call, failures come back through onUnreachable
            update(readiness.onTransportState(ConnectivityState.READY));
            return;
        }
        final int watching = generation;
        watch = connector.newCall(HealthProtocol.WATCH, CallOptions.DEFAULT.withWaitForReady(),
                Mono.just(HealthProtocol.request(healthService)))
            .subscribe(
                response -> serializer.execute(() -> onHealth(watching, response)),
                error -> serializer.execute(() -> onWatchEnded(watching, Status.fromThrowable(error))),
                () -> serializer.execute(() -> onWatchEnded(watching,
                    Status.UNAVAILABLE.withDescription("health watch ended by " + address))));
    }

    private void onHealth(final int watching, final Int32Value response)
    {
        if (watching != generation || shutdown)
        {
            return;
        }
        backoffNanos = MIN_BACKOFF_NANOS;
        readiness.onTransportState(ConnectivityState.READY);
        update(readiness.onHealth(response.getValue()));
    }

    private void onWatchEnded(final int watching, final Status status)
    {
        if (watching != generation || shutdown)
        {
            return;
        }
        if (status.code() == StatusCode.UNIMPLEMENTED)
        {
            readiness.onTransportState(ConnectivityState.READY);
            update(readiness.onHealthUnimplemented());
            return;
        }
        failAndRetryLater();
    }

    @Override
    public Status lastFailure()
    {
        return lastFailure;
    }

    /**
     * A call found the replica unreachable (could not connect, or the connection died).
     *
     * @param cause the attempt's status.
     */
    void onUnreachable(final Status cause)
    {
        lastFailure = cause;
        serializer.execute(() ->
        {
            if (!shutdown && state == ConnectivityState.READY)
            {
                generation++;
                failAndRetryLater();
            }
        });
    }

    /**
     * An attempt to connect failed (serializer). The subchannel leaves READY (without health checking it is READY
     * before it connects) or CONNECTING (with it, the health watch waits for the connection) for TRANSIENT_FAILURE, as
     * when a call finds the replica unreachable: the balancer stops picking it (pick_first moves to the next address),
     * and the channel's state says so. Wait-for-ready calls waiting on its connector are handed back to be picked
     * again when another replica is READY; with none, they keep waiting here (their deadlines run).
     */
    private void onConnectFailed(final Status status)
    {
        if (shutdown || (state != ConnectivityState.READY && state != ConnectivityState.CONNECTING))
        {
            return;
        }
        generation++;
        failAndRetryLater();
        final SubchannelConnector c = connector;
        if (c != null && registry.anotherReady(this))
        {
            c.releaseWaiters(status);
        }
    }

    /**
     * A call was refused by GOAWAY: the replica drains this connection.
     */
    void onGoAway()
    {
        serializer.execute(() ->
        {
            if (!shutdown && state == ConnectivityState.READY)
            {
                generation++;
                dispose();
                update(readiness.onGoAway()); // IDLE: the balancer asks for a new connection
            }
        });
    }

    private void failAndRetryLater()
    {
        dispose();
        update(readiness.onTransportState(ConnectivityState.TRANSIENT_FAILURE));
        final long delay = (long)(backoffNanos * (0.8 + 0.4 * ThreadLocalRandom.current().nextDouble()));
        backoffNanos = Math.min(MAX_BACKOFF_NANOS, backoffNanos * 2);
        final int failed = generation;
        retry = timer.schedule(() -> serializer.execute(() ->
        {
            if (failed == generation && !shutdown)
            {
                connect();
            }
        }), delay, TimeUnit.NANOSECONDS);
    }

    private void dispose()
    {
        if (watch != null)
        {
            watch.dispose();
            watch = null;
        }
        if (retry != null)
        {
            retry.dispose();
            retry = null;
        }
    }

    private void update(final ConnectivityState next)
    {
        if (next != state && !shutdown)
        {
            state = next;
            // queued behind the task running now: a balancer is never re-entered from its own requestConnection()
            serializer.execute(() ->
            {
                if (!shutdown)
                {
                    listener.onStateChange(this, next);
                }
            });
        }
    }

    @Override
    public void shutdown()
    {
        serializer.execute(() ->
        {
            if (shutdown)
            {
                return;
            }
            shutdown = true;
            state = ConnectivityState.SHUTDOWN;
            generation++;
            dispose();
            closeWhenIdle();
        });
    }

    /**
     * A call on this subchannel ended: closes the connector if the subchannel was shut down and this was the last.
     */
    void onCallEnded()
    {
        if (shutdown && load.outstanding() == 0)
        {
            serializer.execute(this::closeWhenIdle);
        }
    }

    private void closeWhenIdle()
    {
        final SubchannelConnector c = connector;
        if (load.outstanding() != 0)
        {
            return;
        }
        if (c != null && !c.isClosed())
        {
            c.close(); // no call of ours is running on it: nothing is failed by closing
        }
        if (!retiredTold)
        {
            retiredTold = true;
            registry.retire(this); // nothing of it is left to close: a channel whose addresses keep changing does not grow
        }
    }

    @Override
    public String toString()
    {
        return "Subchannel{" + address + ", " + state + ", " + load + "}";
    }
}
