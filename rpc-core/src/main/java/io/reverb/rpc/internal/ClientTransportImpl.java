package io.reverb.rpc.internal;

import io.reverb.rpc.CallOptions;
import io.reverb.rpc.MethodDescriptor;
import io.reverb.rpc.RpcClientConnection;
import io.reverb.rpc.Status;
import io.reverb.rpc.retry.CallFailureCause;
import io.reverb.rpc.transport.Connection;
import io.reverb.rpc.transport.TransportProvider;
import io.reverb.rpc.transport.Transports;
import io.reverb.rpc.transport.stream.ClientStream;
import io.reverb.rpc.transport.stream.ClientStreamListener;
import io.reverb.rpc.transport.stream.ClientTransport;
import java.net.URI;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.function.Consumer;
import javax.net.ssl.SSLSession;

/**
 * The client transport: one connection, the stream SPI's {@link ClientTransport} and the published one-connection API
 * ({@link RpcClientConnection}), over that connection's {@code ClientWireConnection}. One attempt to connect, no
 * reconnect, no transparent retry (a refused call fails as refused and its owner decides). Its owners: reverb-grpc's
 * transports (through the API), and a channel's subchannels ({@link SubchannelConnector}, which makes one of these per
 * connection, puts its own calls on it and makes another when it is lost).
 */
public final class ClientTransportImpl extends ClientCallStarter implements RpcClientConnection, ClientTransport
{
    private final URI uri;
    private final TransportProvider provider;
    /** The subchannel that owns this connection (its keep-alive interval, its metrics), or null. */
    private final SubchannelConnector owner;
    private final int lastStreamId;
    private final CompletableFuture<Void> connected = new CompletableFuture<>();
    /** The connection while it takes calls: the lock-free path of {@link #acquire}. */
    private volatile ClientWireConnection ready;

    // guarded by this
    private State state = State.IDLE;
    private ClientWireConnection connection;
    private final List<ClientCall<?, ?>> waiters = new ArrayList<>();
    private boolean closeWhenConnected;
    private Consumer<Status> lostListener;
    private Status lost;

    /**
     * @param config the connection's settings (transparent retry and reconnect settings are not used).
     */
    public ClientTransportImpl(final ChannelConfig config)
    {
        this(config, null, ClientWireConnection.LAST_STREAM_ID);
    }

    /**
     * @param config       the connection's settings.
     * @param owner        the subchannel that owns it, or null.
     * @param lastStreamId the last stream id the connection may use
     *                     ({@link ClientWireConnection#LAST_STREAM_ID}; lower in tests).
     */
    ClientTransportImpl(final ChannelConfig config, final SubchannelConnector owner, final int lastStreamId)
    {
        super(config, owner != null ? owner.metrics() : null);
        this.uri = Transports.parse(config.uri);
        this.provider = Transports.providerFor(uri);
        this.owner = owner;
        this.lastStreamId = lastStreamId;
    }

    @Override
    long keepAliveNanos()
    {
        return owner != null ? owner.keepAliveNanos() : super.keepAliveNanos();
    }

    @Override
    void keepAliveTooFrequent()
    {
        if (owner != null)
        {
            owner.keepAliveTooFrequent(); // the subchannel's next connections PING half as often
        }
        else
        {
            super.keepAliveTooFrequent();
        }
    }

    /** @return the connection while it takes new calls, or null. */
    ClientWireConnection usable()
    {
        final ClientWireConnection c = ready;
        return c != null && c.isUsable() ? c : null;
    }

    /** @return the connection once connected (usable or not any more), or null. */
    synchronized ClientWireConnection connected()
    {
        return connection;
    }

    @Override
    public synchronized State state()
    {
        return state;
    }

    @Override
    public CompletableFuture<Void> connect()
    {
        final boolean start;
        synchronized (this)
        {
            start = state == State.IDLE;
            if (start)
            {
                state = State.CONNECTING;
            }
        }
        if (start)
        {
            attempt();
        }
        return connected.copy(); // a caller completing its copy cannot change this connection's outcome
    }

    private void attempt()
    {
        final ClientWireConnection c = new ClientWireConnection(this, config.maxInboundMessageSize, lastStreamId);
        try
        {
            provider.connect(uri, config.transportOptions, c).whenComplete((transport, error) ->
                onConnectResult(c, transport, error));
        }
        catch (final RuntimeException e)
        {
            onConnectResult(c, null, e);
        }
    }

    private void onConnectResult(final ClientWireConnection c, final Connection transport, final Throwable error)
    {
        final List<ClientCall<?, ?>> waiting;
        Status failure = null;
        boolean closeNow = false;
        synchronized (this)
        {
            waiting = new ArrayList<>(waiters);
            waiters.clear();
            if (error != null)
            {
                failure = connectFailure(error);
                state = State.CLOSED;
            }
            else
            {
                c.attach(transport);
                if (state == State.CLOSED)
                {
                    closeNow = true; // closed while connecting
                    failure = notTakingCalls();
                }
                else
                {
                    connection = c;
                    state = State.READY;
                    ready = c;
                    if (closeWhenConnected)
                    {
                        state = State.DRAINING;
                        ready = null;
                        failure = notTakingCalls();
                    }
                }
            }
        }
        if (closeNow)
        {
            c.closeWithError(failure);
        }
        else if (error == null && failure != null)
        {
            c.drain(); // shut down while connecting: nothing runs on it, so it closes now
        }
        if (failure == null)
        {
            connected.complete(null);
            for (final ClientCall<?, ?> call : waiting)
            {
                call.onConnection(c);
            }
        }
        else
        {
            connected.completeExceptionally(failure.asException());
            for (final ClientCall<?, ?> call : waiting)
            {
                call.failBeforeStart(failure);
            }
        }
    }

    /** Guarded by this: why a call cannot start here now; the server never saw it, so it may go elsewhere. */
    private Status notTakingCalls()
    {
        return Status.UNAVAILABLE.withDescription("connection to " + config.uri + " takes no new calls (" + state + ")")
            .withCause(CallFailureCause.of(CallFailureCause.Reason.CHANNEL_CLOSED));
    }

    @Override
    void acquire(final ClientCall<?, ?> call)
    {
        final ClientWireConnection current = ready;
        if (current != null && current.isUsable())
        {
            call.onConnection(current);
            return;
        }
        Status failure = null;
        boolean start = false;
        ClientWireConnection usable = null;
        synchronized (this)
        {
            if (call.isDone())
            {
                return;
            }
            switch (state)
            {
                case IDLE:
                    state = State.CONNECTING;
                    start = true;
                    waiters.add(call);
                    break;
                case CONNECTING:
                    waiters.add(call);
                    break;
                case READY:
                    if (connection.isUsable())
                    {
                        usable = connection;
                    }
                    else
                    {
                        failure = notTakingCalls();
                    }
                    break;
                default:
                    failure = notTakingCalls();
            }
        }
        if (usable != null)
        {
            call.onConnection(usable);
        }
        else if (failure != null)
        {
            call.failBeforeStart(failure);
        }
        else if (start)
        {
            attempt();
        }
    }

    /**
     * A stream of the stream SPI on the connection, if it takes calls now (a stream does not wait for one: the owner
     * opens streams once {@link #connect()} completed, as grpc-java's subchannel does after {@code transportReady}).
     */
    @Override
    public <Req> ClientStream<Req> newStream(final MethodDescriptor<Req, ?> method, final CallOptions options,
        final ClientStreamListener listener)
    {
        final OutboundCompression compression = compressionOf(options);
        final TransportClientStream<Req> stream = new TransportClientStream<>(this, method, options,
            compression != null ? compression : OutboundCompression.NONE, listener);
        if (compression == null)
        {
            stream.startFailed(Status.INTERNAL.withDescription("Unable to find compressor by name " +
                options.compression() + " (register it in the channel's codecRegistry)"));
            return stream;
        }
        stream.start(usable());
        return stream;
    }

    @Override
    void reacquireLater(final ClientCall<?, ?> call)
    {
        // transparent retry is off here, so only a call that lost a race with GOAWAY comes back: it fails as refused
        timer().schedule(() -> acquire(call));
    }

    @Override
    synchronized void removeWaiter(final ClientCall<?, ?> call)
    {
        waiters.remove(call);
    }

    /**
     * Its connection takes no new calls any more (GOAWAY, failure, close, its stream ids used up); may be called more
     * than once.
     *
     * @param c   the connection.
     * @param why the reason.
     */
    void connectionUnusable(final ClientWireConnection c, final Status why)
    {
        final Consumer<Status> listener;
        synchronized (this)
        {
            if (c != connection)
            {
                return;
            }
            ready = null;
            if (state == State.READY)
            {
                state = State.DRAINING;
            }
            if (lost != null)
            {
                return;
            }
            lost = why;
            listener = lostListener;
        }
        if (listener != null)
        {
            listener.accept(why);
        }
    }

    /** Its connection is closed. */
    void connectionClosed(final ClientWireConnection c)
    {
        synchronized (this)
        {
            if (c != connection)
            {
                return;
            }
            state = State.CLOSED;
        }
        if (owner != null)
        {
            owner.closed(this);
        }
    }

    @Override
    public String localAddress()
    {
        final ClientWireConnection c = upConnection();
        return c == null ? null : c.transportLocalAddress();
    }

    @Override
    public SSLSession sslSession()
    {
        final ClientWireConnection c = upConnection();
        return c == null ? null : c.transportSslSession();
    }

    /** @return the connection while it is up (ready or draining), or null. */
    private synchronized ClientWireConnection upConnection()
    {
        return state == State.READY || state == State.DRAINING ? connection : null;
    }

    @Override
    public CompletableFuture<Long> ping()
    {
        final ClientWireConnection c;
        synchronized (this)
        {
            c = state == State.READY || state == State.DRAINING ? connection : null;
        }
        if (c == null)
        {
            return CompletableFuture.failedFuture(Status.UNAVAILABLE.withDescription("connection to " + config.uri +
                " is not connected (" + state() + ")").asException());
        }
        return c.ping();
    }

    @Override
    public void onLost(final Consumer<Status> listener)
    {
        Objects.requireNonNull(listener, "listener");
        final Status already;
        synchronized (this)
        {
            lostListener = listener;
            already = lost;
        }
        if (already != null)
        {
            listener.accept(already);
        }
    }

    @Override
    public void shutdown()
    {
        final ClientWireConnection c;
        synchronized (this)
        {
            switch (state)
            {
                case IDLE:
                    state = State.CLOSED;
                    c = null;
                    break;
                case CONNECTING:
                    closeWhenConnected = true;
                    c = null;
                    break;
                case READY:
                    state = State.DRAINING;
                    ready = null;
                    c = connection;
                    break;
                default:
                    c = null;
            }
        }
        if (c != null)
        {
            connectionUnusable(c, Status.UNAVAILABLE.withDescription("connection shut down by this side"));
            c.drain();
        }
        if (state() == State.CLOSED)
        {
            connected.completeExceptionally(Status.UNAVAILABLE.withDescription("connection shut down").asException());
        }
    }

    @Override
    public void close()
    {
        close(Status.UNAVAILABLE.withDescription("connection closed")
            .withCause(CallFailureCause.of(CallFailureCause.Reason.CHANNEL_CLOSED)));
    }

    /**
     * Closes now: calls running on it fail with {@code status}.
     *
     * @param status why.
     */
    void close(final Status status)
    {
        final ClientWireConnection c;
        final List<ClientCall<?, ?>> waiting;
        synchronized (this)
        {
            state = State.CLOSED;
            ready = null;
            c = connection;
            waiting = new ArrayList<>(waiters);
            waiters.clear();
        }
        connected.completeExceptionally(status.asException());
        for (final ClientCall<?, ?> call : waiting)
        {
            call.failBeforeStart(status);
        }
        if (c != null)
        {
            connectionUnusable(c, status);
            c.closeWithError(status);
        }
    }

    @Override
    public String toString()
    {
        return "RpcClientConnection{" + config.uri + ", " + state() + "}";
    }
}
