package io.reverb.grpc;

import com.google.common.net.InetAddresses;
import io.grpc.InternalChannelz;
import io.grpc.InternalInstrumented;
import io.grpc.Metadata;
import io.grpc.ServerMethodDefinition;
import io.grpc.ServerServiceDefinition;
import io.grpc.ServerStreamTracer;
import io.grpc.internal.GrpcUtil;
import io.grpc.internal.InternalServer;
import io.grpc.internal.ServerListener;
import io.grpc.internal.ServerTransport;
import io.grpc.internal.SharedResourceHolder;
import io.grpc.internal.StatsTraceContext;
import io.reverb.rpc.AcceptedConnection;
import io.reverb.rpc.Deadline;
import io.reverb.rpc.Marshaller;
import io.reverb.rpc.RpcServer;
import io.reverb.rpc.Status;
import io.reverb.rpc.transport.Transports;
import io.reverb.rpc.transport.stream.ServerStream;
import io.reverb.rpc.transport.stream.ServerStreamHandler;
import io.reverb.rpc.transport.stream.ServerStreamListener;

import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.ScheduledExecutorService;
import java.util.function.UnaryOperator;

/**
 * grpc-java's transport server (its {@link InternalServer}, the listener) over one {@link RpcServer}: the Reverb
 * server listens, accepts connections and runs the wire protocol. Each connection it accepts becomes one grpc-java
 * {@link ServerTransport} ({@link ReverbServerTransport}), as each accepted channel is one for Netty: grpc-java's
 * per-transport filters, channelz and handshake timeout see one transport per Reverb connection. Every call on a
 * connection becomes a {@link ReverbServerStream} handed to that transport's listener, which dispatches it to the
 * service, its interceptors and executor as it would a Netty stream.
 *
 * <p>Its listen addresses are the bound Reverb address, then, for an address of {@code host:port} ({@code tcp://},
 * {@code reverb://}, {@code rdma://}), the bound port as an {@link InetSocketAddress}, so that grpc-java's
 * {@code Server.getPort()} is the bound port ({@code tcp://0.0.0.0:0} resolved), as over Netty. A call's authority
 * ({@code ServerCall.getAuthority()}) is the one its grpc-java client sent, else the authority of the bound address
 * ({@code host:port}, or the name of an {@code shm://} or {@code inproc://} address): see {@link ReverbClientTransport}
 * for when a client sends none; a native Reverb client never does.
 */
final class ReverbServer implements InternalServer
{
    /** The accept-encoding every Reverb client has. */
    private static final byte[] GZIP = "gzip".getBytes(StandardCharsets.US_ASCII);
    /** Graceful shutdown lets calls run to their end, as grpc-java's does; shutdownNow cancels them. */
    private static final Duration GRACEFUL = Duration.ofDays(365);

    private final ReverbAddress address;
    private final RpcServer rpcServer;
    private final List<? extends ServerStreamTracer.Factory> tracerFactories;
    private final ScheduledExecutorService timer = SharedResourceHolder.get(GrpcUtil.TIMER_SERVICE);
    private ServerListener serverListener;
    private volatile ReverbAddress boundAddress;
    /** {@link #boundAddress}, and its port as an {@link InetSocketAddress} where it has one. */
    private volatile List<SocketAddress> listenAddresses;
    /** The authority of a call whose client sent none: the bound address's. */
    private volatile String defaultAuthority;
    /** Transports created and not yet terminated; with {@link #shutdown}, decides when the timer is released. */
    private int liveTransports;
    private boolean shutdown;
    private boolean timerReleased;

    ReverbServer(
        final String uri, final List<ServerServiceDefinition> services,
        final List<? extends ServerStreamTracer.Factory> tracerFactories, final UnaryOperator<RpcServer.Builder> configure)
    {
        this.address = new ReverbAddress(uri);
        this.boundAddress = address;
        this.listenAddresses = Collections.singletonList(address);
        this.defaultAuthority = authorityOf(address);
        this.tracerFactories = tracerFactories;
        // every call goes to grpc-java's server as a stream, which looks the method up once (its services, then its
        // fallback registry; UNIMPLEMENTED as on Netty); the services' methods are only named, to be counted each
        final List<String> methods = new ArrayList<>();
        for (final ServerServiceDefinition service : services)
        {
            for (final ServerMethodDefinition<?, ?> method : service.getMethods())
            {
                methods.add(method.getMethodDescriptor().getFullMethodName());
            }
        }
        final RpcServer.Builder builder = RpcServer.builder(uri).streamHandler(new Streams(), methods);
        // added after the user's settings, which may add listeners (and native services) of their own
        this.rpcServer = configure.apply(builder).addConnectionListener(new Connections()).build();
    }

    ReverbAddress address()
    {
        return boundAddress;
    }

    List<? extends ServerStreamTracer.Factory> tracerFactories()
    {
        return tracerFactories;
    }

    ScheduledExecutorService timer()
    {
        return timer;
    }

    // ---------------------------------------------------------------- InternalServer

    @Override
    public void start(final ServerListener listener) throws IOException
    {
        this.serverListener = listener;
        try
        {
            rpcServer.start();
        }
        catch (final RuntimeException e)
        {
            synchronized (this)
            {
                shutdown = true;
                releaseTimerIfDoneLocked();
            }
            throw new IOException("cannot serve " + address + ": " + e.getMessage(), e);
        }
        final ReverbAddress bound = new ReverbAddress(rpcServer.address());
        defaultAuthority = authorityOf(bound);
        listenAddresses = listenAddresses(bound);
        boundAddress = bound;
    }

    /**
     * @param address a Reverb address.
     * @return its authority ({@code host:port}, or an {@code shm://} or {@code inproc://} name), else the address.
     */
    private static String authorityOf(final ReverbAddress address)
    {
        try
        {
            final String authority = Transports.parse(address.uri()).getRawAuthority();
            return authority != null ? authority : address.uri();
        }
        catch (final IllegalArgumentException e)
        {
            return address.uri();
        }
    }

    /**
     * @param bound the bound address.
     * @return it, then its port as an {@link InetSocketAddress} if it is a {@code host:port} address (unresolved for a
     * host name: no DNS lookup here).
     */
    static List<SocketAddress> listenAddresses(final ReverbAddress bound)
    {
        final URI uri;
        try
        {
            uri = Transports.parse(bound.uri());
        }
        catch (final IllegalArgumentException e)
        {
            return Collections.singletonList(bound);
        }
        final String host = uri.getHost();
        if (host == null || uri.getPort() < 0)
        {
            return Collections.singletonList(bound); // shm://name, inproc://name: no port
        }
        final InetSocketAddress port = InetAddresses.isUriInetAddress(host) ?
            new InetSocketAddress(InetAddresses.forUriString(host), uri.getPort()) :
            InetSocketAddress.createUnresolved(host, uri.getPort());
        return List.of(bound, port);
    }

    /**
     * Stops listening and tells grpc-java's server, which then shuts down (or, after its shutdownNow, closes) each
     * connection's transport. The Reverb server's own graceful shutdown sends every connection GOAWAY at once, so that
     * a connection accepted as the listener closed is drained too.
     */
    @Override
    public void shutdown()
    {
        synchronized (this)
        {
            if (shutdown)
            {
                return;
            }
            shutdown = true;
        }
        rpcServer.shutdown(GRACEFUL); // accepts no connection from here on
        synchronized (this)
        {
            releaseTimerIfDoneLocked();
        }
        if (serverListener != null)
        {
            serverListener.serverShutdown();
        }
    }

    @Override
    public SocketAddress getListenSocketAddress()
    {
        return boundAddress;
    }

    @Override
    public InternalInstrumented<InternalChannelz.SocketStats> getListenSocketStats()
    {
        return null;
    }

    @Override
    public List<? extends SocketAddress> getListenSocketAddresses()
    {
        return listenAddresses;
    }

    @Override
    public List<InternalInstrumented<InternalChannelz.SocketStats>> getListenSocketStatsList()
    {
        return null;
    }

    /** The grpc-java timer is shared (reference-counted): released once shut down and every transport ended. */
    private void releaseTimerIfDoneLocked()
    {
        if (shutdown && liveTransports == 0 && !timerReleased)
        {
            timerReleased = true;
            SharedResourceHolder.release(GrpcUtil.TIMER_SERVICE, timer);
        }
    }

    @Override
    public String toString()
    {
        return "ReverbServer{" + boundAddress + "}";
    }

    /** Makes one grpc-java transport of each connection the Reverb server accepts, and ends it with the connection. */
    private final class Connections implements AcceptedConnection.Listener
    {
        @Override
        public void connectionAccepted(final AcceptedConnection connection)
        {
            final ReverbServerTransport transport = new ReverbServerTransport(ReverbServer.this, connection);
            synchronized (ReverbServer.this)
            {
                if (timerReleased)
                {
                    // accepted as the server shut down: rpc-core refuses the connection (nothing was created for it)
                    throw new IllegalStateException("the grpc-java server is shut down");
                }
                liveTransports++;
            }
            connection.attach(transport);
            try
            {
                // before the first call on the connection reaches a handler (rpc-core's guarantee): before streamCreated
                transport.start(serverListener.transportCreated(transport), boundAddress);
            }
            catch (final RuntimeException | Error e)
            {
                connection.attach(null); // rpc-core refuses the connection and tells no end of it to this listener
                transportEnded();
                throw e;
            }
        }

        @Override
        public void connectionClosed(final AcceptedConnection connection, final Throwable cause)
        {
            final Object attached = connection.attachment();
            if (!(attached instanceof ReverbServerTransport))
            {
                return; // never ours: a listener added before this one refused the connection
            }
            ((ReverbServerTransport)attached).terminated();
            transportEnded();
        }

        private void transportEnded()
        {
            synchronized (ReverbServer.this)
            {
                liveTransports--;
                releaseTimerIfDoneLocked();
            }
        }
    }

    /**
     * Hands each call the Reverb server does not serve itself (every grpc-java call) to its connection's grpc-java
     * transport, as a stream.
     */
    private final class Streams implements ServerStreamHandler<InputStream>
    {
        @Override
        public Marshaller<InputStream> marshaller()
        {
            return Payload.MARSHALLER;
        }

        @Override
        // CHECKSTYLE.OFF: InlineFullyQualifiedName - grpc-java's Metadata is imported, Reverb's is spelled out
        public void streamCreated(final ServerStream<InputStream> call, final String fullMethodName,
            final io.reverb.rpc.Metadata requestHeaders)
        // CHECKSTYLE.ON: InlineFullyQualifiedName
        {
            final AcceptedConnection connection = call.connection();
            final Object attached = connection == null ? null : connection.attachment();
            if (!(attached instanceof ReverbServerTransport))
            {
                // every connection gets its transport when accepted, before its first call; anything else is a bug
                call.setListener(Ignored.INSTANCE);
                call.close(Status.INTERNAL.withDescription("no grpc-java transport for the connection of " +
                    fullMethodName), null);
                return;
            }
            final ReverbServerTransport transport = (ReverbServerTransport)attached;
            // without a peer's grpc-timeout (the deadline travels in the CALL frame), with gzip accepted unless the
            // client said otherwise (every Reverb client decompresses gzip, engine protocol v3)
            final Metadata headers = GrpcBridge.serverHeaders(requestHeaders, GZIP);
            final Deadline deadline = call.deadline();
            if (deadline != null)
            {
                headers.put(GrpcUtil.TIMEOUT_KEY, Math.max(1, deadline.timeRemainingNanos()));
            }
            final StatsTraceContext stats = StatsTraceContext.newServerContext(tracerFactories, fullMethodName, headers);
            final String authority = GrpcBridge.authorityOf(requestHeaders);
            final ReverbServerStream stream = new ReverbServerStream(call, transport.streamAttributes(), stats,
                authority != null ? authority : defaultAuthority);
            call.setListener(stream);
            transport.streamCreated(stream, fullMethodName, headers);
        }
    }

    /** The listener of a call refused before grpc-java saw it. */
    private enum Ignored implements ServerStreamListener<InputStream>
    {
        INSTANCE;

        @Override
        public void messageRead(final InputStream message)
        {
        }

        @Override
        public void halfClosed()
        {
        }

        @Override
        public void onReady()
        {
        }

        @Override
        public void closed(final Status status)
        {
        }
    }
}
