package io.reverb.rpc.internal;

import io.reverb.rpc.ConnectivityState;
import io.reverb.rpc.Status;
import io.reverb.rpc.StatusCode;
import io.reverb.rpc.retry.CallFailureCause;
import io.reverb.rpc.transport.Connection;
import io.reverb.rpc.transport.Transports;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/**
 * A subchannel's connector (the subchannel layer's connection half, as grpc-java's {@code InternalSubchannel}): the
 * connection to one address, made when a call first needs it, made again with exponential backoff when it fails or
 * drains, and the calls that wait meanwhile (fail-fast or wait-for-ready). The channel's load balancer picks among
 * subchannels; each subchannel ({@code io.reverb.rpc.lb.ChannelSubchannel}) owns one of these. Each connection is a
 * {@link ClientTransportImpl} (the client transport: one attempt, no reconnect of its own): this class is the
 * reconnect loop above it.
 *
 * <p><b>After a GOAWAY.</b> A server that goes away gracefully closes its listener first; a process taking its address
 * (a restart, a hand-over) binds a moment later. A call made in that moment found nothing listening, and as gRPC it
 * failed fast, with every fail-fast call for the backoff after it (about a second of UNAVAILABLE for a gap of
 * milliseconds). For {@link #goAwayGraceNanos} after a connection of this subchannel received GOAWAY, a failed
 * attempt fails no call: the calls keep waiting (their deadlines still run), the state stays CONNECTING, and the next
 * attempt comes {@link #GOAWAY_RETRY_NANOS} later, without growing the backoff. Past the grace, failures count as
 * before. Credentials refused (UNAUTHENTICATED) are never waited out.
 */
public final class SubchannelConnector extends ClientCallStarter
{
    /** A call failed because this channel (or the subchannel that owns it) was closed before it was sent. */
    private static final Status CHANNEL_CLOSED = Status.UNAVAILABLE.withDescription("channel closed")
        .withCause(CallFailureCause.of(CallFailureCause.Reason.CHANNEL_CLOSED));

    /** How long after a GOAWAY failed attempts fail no call (see the class comment); tests shorten it. */
    static volatile long goAwayGraceNanos = TimeUnit.SECONDS.toNanos(1);
    /** How soon an attempt follows one that failed within the grace after a GOAWAY. */
    static final long GOAWAY_RETRY_NANOS = TimeUnit.MILLISECONDS.toNanos(20);

    private final Set<ClientTransportImpl> connections = ConcurrentHashMap.newKeySet();

    private volatile ClientTransportImpl ready;
    /** The last stream id a connection may use ({@link ClientWireConnection#LAST_STREAM_ID}; lower in tests). */
    volatile int lastStreamId = ClientWireConnection.LAST_STREAM_ID;
    private volatile boolean closed;
    // guarded by this
    private boolean connecting;
    private boolean reconnectScheduled;
    private final List<ClientCall<?, ?>> waiters = new ArrayList<>();
    private volatile Runnable connectionLostListener;
    private volatile Runnable stateListener;
    private volatile Consumer<Status> connectFailedListener;
    private Status lastFailure;
    private long nextAttemptNanos;
    private long lastFailureNanos;
    /** A fail-fast call found the channel backing off: attempt again soon (see {@link #nextAttemptForCallsNanos}). */
    private boolean callsWant;
    private long backoffNanos;
    /** Until when failed attempts fail no call: set when a connection received GOAWAY (0: none). */
    private long goAwayGraceUntilNanos;

    /**
     * @param config the subchannel's configuration.
     */
    public SubchannelConnector(final ChannelConfig config)
    {
        super(config);
        // fails here, naming the scheme, when no transport serves the address (as a connection would)
        Transports.providerFor(Transports.parse(config.uri));
        this.backoffNanos = config.initialBackoff.toNanos();
    }

// ------------------------------------------------------------------ connection management

    /**
     * @param listener runs (on a transport or timer thread) each time the usable connection stops taking new calls
     *                 (GOAWAY, failure, close); replaces the previous one.
     */
    public void onConnectionLost(final Runnable listener)
    {
        this.connectionLostListener = listener;
    }

    /**
     * @param listener runs (on a caller's, transport or timer thread, never under this connector's lock) after
     *                 {@link #state()} may have changed; replaces the previous one.
     */
    public void onStateChange(final Runnable listener)
    {
        this.stateListener = listener;
    }

    /**
     * @param listener told (on a transport or timer thread, never under this connector's lock) each time an attempt
     *                 to connect failed and counts as a failure (not one within the grace after a GOAWAY), with its
     *                 status; replaces the previous one.
     */
    public void onConnectFailed(final Consumer<Status> listener)
    {
        this.connectFailedListener = listener;
    }

    /**
     * Hands the wait-for-ready calls that wait here for a connection back to their channel: each fails as not sent
     * (its channel picks again, another replica if one is ready). Called when this connector's replica is found
     * unreachable while others serve, so that such calls do not stay with it until their deadline.
     *
     * @param status the attempt's failure, carrying {@link CallFailureCause} CONNECT_FAILED.
     * @return how many calls were handed back.
     */
    public int releaseWaiters(final Status status)
    {
        final List<ClientCall<?, ?>> release;
        synchronized (this)
        {
            if (closed || connecting || waiters.isEmpty())
            {
                return 0;
            }
            release = new ArrayList<>(waiters);
            waiters.clear();
        }
        for (final ClientCall<?, ?> call : release)
        {
            call.failBeforeStart(status);
        }
        return release.size();
    }

    /**
     * @return the fabric of the connection that takes calls now ({@link Connection#fabric()}),
     * or null when none does.
     */
    public String fabric()
    {
        final ClientTransportImpl current = ready;
        final ClientWireConnection usable = current == null ? null : current.usable();
        final Connection transport = usable == null ? null : usable.connection;
        return transport == null ? null : transport.fabric();
    }

    /**
     * @return the connection's state: READY while a connection takes calls, CONNECTING during an attempt,
     * TRANSIENT_FAILURE after a failed attempt (until the next), IDLE when none is needed yet (connections are made on
     * demand), SHUTDOWN once closed.
     */
    public synchronized ConnectivityState state()
    {
        if (closed)
        {
            return ConnectivityState.SHUTDOWN;
        }
        final ClientTransportImpl current = ready;
        if (current != null && current.usable() != null)
        {
            return ConnectivityState.READY;
        }
        if (connecting)
        {
            return ConnectivityState.CONNECTING;
        }
        return lastFailure != null ? ConnectivityState.TRANSIENT_FAILURE : ConnectivityState.IDLE;
    }

    /**
     * Connects now unless a connection is usable or an attempt is under way (as grpc-java's
     * {@code getState(true)}); a failed attempt schedules no reconnect by itself (calls that want a connection do).
     */
    public void requestConnection()
    {
        final boolean start;
        synchronized (this)
        {
            final ClientTransportImpl current = ready;
            start = !closed && !connecting && (current == null || current.usable() == null);
            if (start)
            {
                connecting = true;
            }
        }
        if (start)
        {
            connect();
        }
    }

    /**
     * A call wants a connection but was not given to this connector (its subchannel is failing, so the channel's picker
     * failed it fast or keeps it waiting): after a failed attempt, the next one comes within
     * {@code reconnectWhileCallsWait} of it, as for the calls this connector fails fast itself.
     */
    public void callsWantConnection()
    {
        synchronized (this)
        {
            if (closed || connecting || lastFailure == null)
            {
                return;
            }
            callsWant = true;
            scheduleReconnect();
        }
    }

    private void stateMayHaveChanged()
    {
        final Runnable listener = stateListener;
        if (listener != null)
        {
            listener.run();
        }
    }

    @Override
    void acquire(final ClientCall<?, ?> call)
    {
        final ClientTransportImpl current = ready;
        final ClientWireConnection usable = current != null ? current.usable() : null;
        if (usable != null)
        {
            call.onConnection(usable);
            return;
        }
        slowAcquire(call);
    }

    private void slowAcquire(final ClientCall<?, ?> call)
    {
        ClientWireConnection current = null;
        Status failure = null;
        boolean connect = false;
        synchronized (this)
        {
            if (call.isDone())
            {
                return; // cancelled or timed out before it could wait: never park it
            }
            if (closed)
            {
                failure = CHANNEL_CLOSED;
            }
            else if (ready != null && (current = ready.usable()) != null)
            {
                // connected meanwhile
            }
            else
            {
                if (!connecting && lastFailure != null && System.nanoTime() - nextAttemptForCallsNanos() < 0)
                {
                    if (call.waitForReady)
                    {
                        waiters.add(call);
                    }
                    else
                    {
                        failure = lastFailure; // fails fast, as in gRPC, but the channel tries again soon
                        callsWant = true;
                    }
                    scheduleReconnect();
                }
                else
                {
                    waiters.add(call);
                    if (!connecting)
                    {
                        connecting = true;
                        connect = true;
                    }
                }
            }
        }
        if (current != null)
        {
            call.onConnection(current);
        }
        else if (failure != null)
        {
            call.failBeforeStart(failure);
        }
        else if (connect)
        {
            connect();
        }
    }

    @Override
    void reacquireLater(final ClientCall<?, ?> call)
    {
        timer().schedule(() -> acquire(call));
    }

    @Override
    void removeWaiter(final ClientCall<?, ?> call)
    {
        synchronized (this)
        {
            waiters.remove(call);
        }
    }

    private void connect()
    {
        stateMayHaveChanged(); // CONNECTING
        final ClientTransportImpl connection = new ClientTransportImpl(config, this, lastStreamId);
        connection.onLost(why -> connectionLost(connection, why));
        connection.connect().whenComplete((ignored, error) -> onConnectResult(connection, error));
    }

    private void onConnectResult(final ClientTransportImpl connection, final Throwable error)
    {
        final List<ClientCall<?, ?>> run = new ArrayList<>();
        final List<ClientCall<?, ?>> fail = new ArrayList<>();
        Status failure = null;
        boolean closeNow = false;
        // the connection's status: UNAUTHENTICATED, or UNAVAILABLE with CONNECT_FAILED
        final Status failed = error == null ? null : Status.fromThrowable(
            error instanceof CompletionException && error.getCause() != null ? error.getCause() : error);
        synchronized (this)
        {
            connecting = false;
            if (error == null)
            {
                if (closed)
                {
                    closeNow = true;
                    fail.addAll(waiters);
                    failure = CHANNEL_CLOSED;
                }
                else
                {
                    connections.add(connection);
                    ready = connection;
                    lastFailure = null;
                    backoffNanos = config.initialBackoff.toNanos();
                    run.addAll(waiters);
                }
                waiters.clear();
            }
            else if (!closed && withinGoAwayGrace(failed))
            {
                // nothing listens where a server just went away: its replacement may be a moment away (class comment)
                connecting = true; // calls keep waiting; the state stays CONNECTING
                retryWithinGoAwayGrace();
                return;
            }
            else
            {
                // jitter of +-20% as gRPC, so that many clients do not reconnect in lockstep
                final long jittered = (long)(backoffNanos * (0.8 + 0.4 * ThreadLocalRandom.current().nextDouble()));
                lastFailureNanos = System.nanoTime();
                nextAttemptNanos = lastFailureNanos + jittered;
                backoffNanos = Math.min(config.maxBackoff.toNanos(), (long)(backoffNanos * 1.6));
                lastFailure = failed;
                // refused credentials are no transient failure: UNAUTHENTICATED, and even wait-for-ready calls fail
                final boolean refused = lastFailure.code() == StatusCode.UNAUTHENTICATED;
                failure = lastFailure;
                for (final ClientCall<?, ?> call : waiters)
                {
                    (call.waitForReady && !refused ? run : fail).add(call);
                }
                waiters.clear();
                waiters.addAll(run);
                run.clear();
                if (!waiters.isEmpty())
                {
                    scheduleReconnect();
                }
            }
        }
        if (closeNow)
        {
            connection.close(CHANNEL_CLOSED);
        }
        stateMayHaveChanged();
        for (final ClientCall<?, ?> call : fail)
        {
            call.failBeforeStart(failure);
        }
        final Consumer<Status> failedListener = connectFailedListener;
        if (failed != null && failedListener != null)
        {
            failedListener.accept(failed);
        }
        final ClientWireConnection usable = run.isEmpty() ? null : connection.connected();
        for (final ClientCall<?, ?> call : run)
        {
            call.onConnection(usable); // no longer usable (lost meanwhile): the call comes back through reacquireLater
        }
    }

    /** Guarded by this. @return true if a failed attempt falls within the grace after a GOAWAY (class comment). */
    private boolean withinGoAwayGrace(final Status failed)
    {
        return goAwayGraceUntilNanos != 0 && System.nanoTime() - goAwayGraceUntilNanos < 0 &&
            failed.code() != StatusCode.UNAUTHENTICATED;
    }

    /** Guarded by this, with {@code connecting} set: the next attempt, {@link #GOAWAY_RETRY_NANOS} from now. */
    private void retryWithinGoAwayGrace()
    {
        timer().schedule(() ->
        {
            synchronized (this)
            {
                if (closed)
                {
                    connecting = false; // close() failed the waiting calls
                    return;
                }
            }
            connect();
        }, GOAWAY_RETRY_NANOS, TimeUnit.NANOSECONDS);
    }

    /**
     * Guarded by this. When calls want a connection (they wait for one, or keep failing fast), the next attempt comes
     * at most {@code ChannelConfig.reconnectWhileCallsWait} (default 1 s) after the last failed one, however far the
     * exponential backoff has grown: a server back after a long outage serves the callers within about that long,
     * instead of after up to the maximum backoff. A channel that no call needs makes no attempt at all (connections
     * are made on demand).
     */
    private long nextAttemptForCallsNanos()
    {
        final long cap = config.reconnectWhileCallsWait.toNanos();
        return lastFailureNanos + cap - nextAttemptNanos < 0 ? lastFailureNanos + cap : nextAttemptNanos;
    }

    // guarded by this
    private void scheduleReconnect()
    {
        if (reconnectScheduled || connecting)
        {
            return;
        }
        reconnectScheduled = true;
        final long delay = Math.max(0, nextAttemptForCallsNanos() - System.nanoTime());
        timer().schedule(() ->
        {
            boolean connect = false;
            synchronized (this)
            {
                reconnectScheduled = false;
                if (!closed && !connecting && (!waiters.isEmpty() || callsWant))
                {
                    connecting = true;
                    connect = true;
                    callsWant = false;
                }
            }
            if (connect)
            {
                connect();
            }
        }, delay, TimeUnit.NANOSECONDS);
    }

    /**
     * A connection of this subchannel stopped taking new calls (GOAWAY, failure, keep-alive timeout, stream ids used
     * up): the next call that needs one makes another.
     */
    private void connectionLost(final ClientTransportImpl connection, final Status why)
    {
        final boolean lost;
        final CallFailureCause cause = CallFailureCause.find(why);
        synchronized (this)
        {
            lost = ready == connection;
            if (lost)
            {
                ready = null;
            }
            if (cause != null && cause.reason() == CallFailureCause.Reason.GOAWAY)
            {
                goAwayGraceUntilNanos = System.nanoTime() + goAwayGraceNanos;
            }
        }
        final Runnable listener = connectionLostListener;
        if (lost && listener != null)
        {
            listener.run();
        }
        if (lost)
        {
            stateMayHaveChanged();
        }
    }

    /** A connection of this subchannel closed. */
    void closed(final ClientTransportImpl connection)
    {
        connections.remove(connection);
    }

    /**
     * Closes the subchannel's connections: waiting and running calls fail with UNAVAILABLE, connections close.
     */
    public void close()
    {
        final List<ClientCall<?, ?>> fail;
        synchronized (this)
        {
            if (closed)
            {
                return;
            }
            closed = true;
            ready = null;
            fail = new ArrayList<>(waiters);
            waiters.clear();
        }
        final Status status = CHANNEL_CLOSED;
        for (final ClientCall<?, ?> call : fail)
        {
            call.failBeforeStart(status);
        }
        for (final ClientTransportImpl connection : connections)
        {
            connection.close(status);
        }
        stateMayHaveChanged();
    }

    /**
     * @return true once closed.
     */
    public boolean isClosed()
    {
        return closed;
    }

    @Override
    public String toString()
    {
        return config.uri;
    }
}
