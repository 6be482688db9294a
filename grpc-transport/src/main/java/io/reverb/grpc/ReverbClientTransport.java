package io.reverb.grpc;

import com.google.common.net.InetAddresses;
import com.google.common.util.concurrent.Futures;
import com.google.common.util.concurrent.ListenableFuture;
import io.grpc.Attributes;
import io.grpc.CallOptions;
import io.grpc.ClientStreamTracer;
import io.grpc.Grpc;
import io.grpc.InternalChannelz;
import io.grpc.InternalLogId;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.SecurityLevel;
import io.grpc.Status;
import io.grpc.internal.ClientStream;
import io.grpc.internal.ClientStreamListener;
import io.grpc.internal.ConnectionClientTransport;
import io.grpc.internal.FailingClientStream;
import io.grpc.internal.GrpcAttributes;
import io.grpc.internal.GrpcUtil;
import io.grpc.internal.SimpleDisconnectError;
import io.reverb.rpc.RpcChannel;
import io.reverb.rpc.RpcClientConnection;
import io.reverb.rpc.retry.CallFailureCause;
import io.reverb.rpc.transport.Transports;
import io.reverb.rpc.transport.stream.ClientTransport;

import java.io.InputStream;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.UnaryOperator;
import javax.net.ssl.SSLSession;

/**
 * grpc-java's client transport over one Reverb connection ({@link RpcClientConnection}), as Netty's and OkHttp's are
 * over one socket: grpc-java's subchannel creates it, {@link #start} connects once, {@code transportReady} when the
 * connection is up, {@code transportShutdown} when it is lost (GOAWAY, failure, keep-alive timeout) or shut down,
 * {@code transportTerminated} once its streams have ended. It does not reconnect once it was ready: grpc-java's
 * subchannel makes a new transport, with grpc-java's own backoff, and grpc-java's load balancing picks among
 * subchannels. One exception before it is ready: within a second of a GOAWAY from its address, a failed connect is
 * tried again 20 ms later with a new connection ({@link GoAwayGrace}), so that a replacement server binding the address
 * a few milliseconds after the old one stopped listening fails no fail-fast call. Every grpc-java
 * stream is a Reverb stream on the connection (its stream SPI, {@link ClientTransport}). The connection PINGs itself per the keep-alive settings.
 *
 * <p>In use: {@code transportInUse(true)} when a stream opens on a transport not reported in use; {@code
 * transportInUse(false)} once no stream has been open for {@link #IN_USE_LINGER_MILLIS} (checked on grpc-java's timer),
 * not at each stream's end: a caller that makes one call after the other would otherwise flip it twice per call, and
 * each flip is a task on grpc-java's subchannel and channel (two objects and two hand-offs per call). grpc-java reads it
 * for its channel's idle mode (an idle timeout of at least a second), so it learns of idleness at most about two
 * lingers later; a terminated transport is no longer in use for grpc-java whatever was reported.
 *
 * <p>Request headers of its own, as Netty's transport sends {@code user-agent} and {@code :authority} with every
 * stream: {@code user-agent} is grpc-java's ({@code "<channel's userAgent> grpc-java-reverb/<version>"}, whatever the
 * application put in the call's metadata), and the call's authority ({@code CallOptions.withAuthority}, else the
 * channel's) travels under {@link GrpcBridge#AUTHORITY}, which the server's {@code ServerCall.getAuthority()} returns.
 * To keep the CALL frame small the authority is left out where the server reports the same by itself: a server given
 * none reports the authority of its own bound address ({@code host:port}, or the name of an {@code shm://} or
 * {@code inproc://} address), so a call leaves out an authority that is the authority of the address it was sent to,
 * when that names an IP address or a named (portless) address; a host name is always sent (no server can tell which
 * of its names the client used). A server bound to another address than the one dialled (a wildcard {@code 0.0.0.0},
 * a NAT) then reports its own. Calls that carry nothing else share one set of request headers per transport.
 */
final class ReverbClientTransport implements ConnectionClientTransport
{
    private final InternalLogId logId;
    private final ReverbAddress address;
    /**
     * Null when {@link #cannotConnect} says why no connection could be made. Replaced only before {@code
     * transportReady}, by a new attempt within the grace after a GOAWAY ({@link GoAwayGrace}); set under the lock.
     */
    private volatile RpcClientConnection connection;
    /** The same connection as a stream transport: each grpc-java stream is one of its streams. */
    private volatile ClientTransport streams;
    private final UnaryOperator<RpcChannel.Builder> configure;
    /** The channel's record of addresses that sent GOAWAY a moment ago, or null: a failed connect ends the transport. */
    private final GoAwayGrace goAways;
    private final Status cannotConnect;
    /** Set before transportReady: with the TLS session and PRIVACY_AND_INTEGRITY once connected inside TLS. */
    private volatile Attributes attributes;
    /** The authority of a call that names none: the channel's (its target's, or overrideAuthority). */
    private final String authority;
    /** The authority the server reports for a call that sends none (see the class comment), or null: always sent. */
    private final String impliedAuthority;
    /** {@link #authority} in ASCII, or null when it is {@link #impliedAuthority} (then not sent). */
    private final byte[] authorityBytes;
    /** grpc-java's user-agent of this transport in ASCII. */
    private final byte[] userAgent;
    // CHECKSTYLE.OFF: InlineFullyQualifiedName - grpc-java's CallOptions and Metadata are imported, Reverb's spelled out
    /** The Reverb options of every call with no metadata and authority of its own: shared, never changed. */
    private final io.reverb.rpc.CallOptions plainCallOptions;
    // CHECKSTYLE.ON: InlineFullyQualifiedName
    // CHECKSTYLE.OFF: InlineFullyQualifiedName - grpc-java's MethodDescriptor is imported, Reverb's is spelled out
    private final ConcurrentHashMap<String, io.reverb.rpc.MethodDescriptor<InputStream, InputStream>> methods;
    // CHECKSTYLE.ON: InlineFullyQualifiedName
    /** The streams not yet closed, a list through the streams themselves (no object per call); guarded by this. */
    private ReverbClientStream live;
    private Listener listener;
    private boolean shutdown;
    private boolean shutdownNotified;
    private boolean terminated;
    private Status shutdownStatus;
    /** Delays the report that the transport is no longer in use, or null: reported when the last stream ends. */
    private final ScheduledExecutorService inUseTimer;
    /** grpc-java was last told that this transport is in use; guarded by this. */
    private boolean reportedInUse;
    /** Streams opened so far; guarded by this (a linger check sees whether one opened while it waited). */
    private long opened;
    /** A linger check is scheduled; guarded by this. */
    private boolean lingering;
    /** {@link #opened} when the scheduled linger check started waiting; guarded by this. */
    private long openedBeforeLinger;
    /** How long no stream must be open before grpc-java hears the transport is no longer in use. */
    static final long IN_USE_LINGER_MILLIS = 100;

    /**
     * @param address    the server's address.
     * @param authority  the channel's authority for this address (grpc-java's transport options), or null for the
     *                   address's own.
     * @param userAgent  the channel's user agent (grpc-java's transport options), or null.
     * @param configure  the Reverb connection's settings.
     * @param methods    the channel's Reverb descriptors, by method name.
     * @param inUseTimer grpc-java's timer, or null (then in use is reported at once, and no GOAWAY grace).
     * @param goAways    the channel's record of GOAWAYs, or null.
     */
    // CHECKSTYLE.OFF: InlineFullyQualifiedName - Reverb's MethodDescriptor (see the field)
    ReverbClientTransport(
        final ReverbAddress address, final String authority, final String userAgent,
        final UnaryOperator<RpcChannel.Builder> configure,
        final ConcurrentHashMap<String, io.reverb.rpc.MethodDescriptor<InputStream, InputStream>> methods,
        final ScheduledExecutorService inUseTimer, final GoAwayGrace goAways)
    // CHECKSTYLE.ON: InlineFullyQualifiedName
    {
        this.inUseTimer = inUseTimer;
        this.configure = configure;
        this.goAways = goAways;
        this.logId = InternalLogId.allocate(ReverbClientTransport.class, address.toString());
        this.address = address;
        this.methods = methods;
        // an address no transport on the class path serves (rdma:// without reverb-transport-rdma, a malformed
        // resolved address) is a connection that cannot be made: start() fails it UNAVAILABLE and grpc-java's
        // subchannel backs off and tries again, as for an unreachable server
        Status cannot = null;
        try
        {
            Transports.providerFor(Transports.parse(address.uri()));
        }
        catch (final IllegalArgumentException e)
        {
            cannot = Status.UNAVAILABLE.withDescription("cannot connect to " + address + ": " + e.getMessage())
                .withCause(e);
        }
        this.cannotConnect = cannot;
        try
        {
            this.connection = cannot != null ? null : newConnection();
        }
        catch (final IllegalArgumentException e)
        {
            // grpc-java's channel balances over its subchannels; each of them is one Reverb connection
            throw new IllegalArgumentException("reverbChannel(...) must not configure load balancing, health checking" +
                " or retries (grpc-java's channel does that, per its service config): " + address, e);
        }
        this.streams = connection == null ? null : ClientTransport.of(connection);
        final URI dialled = cannot == null ? Transports.parse(address.uri()) : null;
        final String own = dialled == null ? null : dialled.getRawAuthority();
        this.authority = authority != null ? authority : own != null ? own : "reverb";
        this.impliedAuthority = dialled == null ? null : impliedAuthority(dialled);
        this.authorityBytes = this.authority.equals(impliedAuthority) ? null : ascii(this.authority);
        this.userAgent = ascii(GrpcUtil.getGrpcUserAgent("reverb", userAgent));
        // CHECKSTYLE.OFF: InlineFullyQualifiedName - Reverb's CallOptions (see the field)
        this.plainCallOptions = io.reverb.rpc.CallOptions.DEFAULT.withMetadata(transportHeaders(null, null));
        // CHECKSTYLE.ON: InlineFullyQualifiedName
        // the local address once connected (see connected): the connection's own end
        this.attributes = Attributes.newBuilder()
            .set(Grpc.TRANSPORT_ATTR_REMOTE_ADDR, address)
            .set(GrpcAttributes.ATTR_SECURITY_LEVEL, address.securityLevel())
            .set(GrpcAttributes.ATTR_CLIENT_EAG_ATTRS, Attributes.EMPTY)
            .build();
    }

    /**
     * @param dialled the address a call is sent to.
     * @return the authority a server bound to that address reports for a call that sends none (its own address's:
     * {@code ip:port}, or an {@code shm://}/{@code inproc://} name), or null where the client's may differ from it (a
     * host name: a server cannot tell which of its names the client used).
     */
    static String impliedAuthority(final URI dialled)
    {
        final String own = dialled.getRawAuthority();
        if (own == null || dialled.getPort() < 0)
        {
            return own; // a name the server binds itself, or none
        }
        final String host = dialled.getHost();
        return host != null && InetAddresses.isUriInetAddress(host) ? own : null;
    }

    private static byte[] ascii(final String text)
    {
        return text.getBytes(StandardCharsets.US_ASCII);
    }

    // CHECKSTYLE.OFF: InlineFullyQualifiedName - grpc-java's CallOptions and Metadata are imported, Reverb's spelled out
    /**
     * The Reverb options a call starts with: its metadata, then this transport's request headers (user-agent, and
     * the authority unless the server reports it by itself).
     *
     * @param metadata      the call's metadata for the Reverb wire (its own, a new object), or null.
     * @param callAuthority the call's authority ({@code CallOptions.withAuthority}), or null for the channel's.
     * @return the call's options, without deadline and compression.
     */
    io.reverb.rpc.CallOptions callOptions(final io.reverb.rpc.Metadata metadata, final String callAuthority)
    {
        if (metadata == null && (callAuthority == null || callAuthority.equals(authority)))
        {
            return plainCallOptions; // the common case: no object per call
        }
        return io.reverb.rpc.CallOptions.DEFAULT.withMetadata(transportHeaders(metadata, callAuthority));
    }

    private io.reverb.rpc.Metadata transportHeaders(final io.reverb.rpc.Metadata metadata, final String callAuthority)
    {
        final io.reverb.rpc.Metadata headers = metadata != null ? metadata : new io.reverb.rpc.Metadata();
        headers.putRaw(GrpcUtil.USER_AGENT_KEY.name(), userAgent);
        if (callAuthority == null || callAuthority.equals(authority))
        {
            if (authorityBytes != null)
            {
                headers.putRaw(GrpcBridge.AUTHORITY, authorityBytes);
            }
        }
        else if (!callAuthority.equals(impliedAuthority))
        {
            headers.putRaw(GrpcBridge.AUTHORITY, ascii(callAuthority));
        }
        return headers;
    }
    // CHECKSTYLE.ON: InlineFullyQualifiedName

    /** @return a new, not yet connected Reverb connection to this transport's address, configured as the channel's. */
    private RpcClientConnection newConnection()
    {
        return RpcClientConnection.create(configure.apply(RpcChannel.builder(address.uri())));
    }

    RpcClientConnection connection()
    {
        return connection;
    }

    ClientTransport streams()
    {
        return streams;
    }

    ReverbAddress address()
    {
        return address;
    }

    @Override
    public synchronized Runnable start(final Listener listener)
    {
        this.listener = listener;
        if (cannotConnect != null)
        {
            return () -> shutdown(cannotConnect, SimpleDisconnectError.SOCKET_ERROR);
        }
        // grpc-java's subchannel is CONNECTING until transportReady: READY only once the Reverb connection is up,
        // TRANSIENT_FAILURE (transportShutdown before ready) when it cannot connect, then grpc-java's own backoff
        final RpcClientConnection first = connection;
        return () -> attempt(first);
    }

    private void attempt(final RpcClientConnection attempt)
    {
        // a connection lost later (GOAWAY, failure) ends this transport: grpc-java goes IDLE and makes another
        attempt.onLost(this::lost);
        attempt.connect().whenComplete((ignored, error) -> connected(error));
    }

    // CHECKSTYLE.OFF: InlineFullyQualifiedName - grpc-java's Status is imported, Reverb's is spelled out
    private void lost(final io.reverb.rpc.Status why)
    // CHECKSTYLE.ON: InlineFullyQualifiedName
    {
        final CallFailureCause cause = CallFailureCause.find(why);
        if (goAways != null && cause != null && cause.reason() == CallFailureCause.Reason.GOAWAY)
        {
            goAways.goAway(address.uri()); // before grpc-java hears of it and makes the next transport
        }
        shutdown(Status.UNAVAILABLE.withDescription("connection to " + address + " lost: " + why.description()),
            SimpleDisconnectError.CONNECTION_RESET);
    }

    private void connected(final Throwable error)
    {
        final boolean alreadyShutdown;
        synchronized (this)
        {
            alreadyShutdown = shutdown;
        }
        if (alreadyShutdown)
        {
            return; // grpc-java gave up on this transport while it connected; terminate() closed the connection
        }
        if (error == null)
        {
            final RpcClientConnection up = connection;
            final String local = up == null ? null : up.localAddress();
            if (local != null)
            {
                // as over Netty (the socket's own address) and in-process (the process's): interceptors and
                // observability read it from the call's attributes
                attributes = attributes.toBuilder().set(Grpc.TRANSPORT_ATTR_LOCAL_ADDR, ReverbAddress.ofPeer(local))
                    .build();
            }
            final SSLSession tls = up == null ? null : up.sslSession();
            if (tls != null)
            {
                // as over Netty's TLS: CallCredentials that need privacy (OAuth) send their tokens, and
                // interceptors find the server's certificates
                attributes = attributes.toBuilder()
                    .set(GrpcAttributes.ATTR_SECURITY_LEVEL, SecurityLevel.PRIVACY_AND_INTEGRITY)
                    .set(Grpc.TRANSPORT_ATTR_SSL_SESSION, tls)
                    .build();
            }
            listener.transportReady();
            return;
        }
        final Status status = GrpcBridge.statusOf(error);
        // refused credentials are not waited out; an address that sent GOAWAY a moment ago is (GoAwayGrace)
        if (status.getCode() == Status.Code.UNAVAILABLE && goAways != null && goAways.within(address.uri()) &&
            retryLater())
        {
            return;
        }
        shutdown(status, SimpleDisconnectError.SOCKET_ERROR);
    }

    /** @return true if another attempt is scheduled (false: grpc-java's timer is gone). */
    private boolean retryLater()
    {
        if (inUseTimer == null)
        {
            return false; // a transport made alone, without grpc-java's timer
        }
        try
        {
            inUseTimer.schedule(this::retry, GoAwayGrace.RETRY_NANOS, TimeUnit.NANOSECONDS);
            return true;
        }
        catch (final RejectedExecutionException e)
        {
            return false; // grpc-java's timer is gone (its channel shut down): fail as without the grace
        }
    }

    /** On grpc-java's timer: a new connection replaces the failed one, still before transportReady. */
    private void retry()
    {
        final RpcClientConnection failed = connection;
        final RpcClientConnection next;
        synchronized (this)
        {
            if (shutdown)
            {
                return; // grpc-java gave up on this transport meanwhile
            }
            next = newConnection();
            connection = next; // shutdown and terminate, under or after this lock, see the new one
            streams = ClientTransport.of(next);
        }
        failed.close(); // closed already by its failure; nothing of it must outlive the transport
        attempt(next);
    }

    @Override
    public ClientStream newStream(
        final MethodDescriptor<?, ?> method, final Metadata headers, final CallOptions callOptions,
        final ClientStreamTracer[] tracers)
    {
        // Kept small, with the rare paths in methods of their own: compiled alone into a large method, it would not be
        // inlined into grpc-java's call path, whose objects (the pick's arguments, the tracers' info) then escape.
        streamCreated(tracers, attributes, headers);
        final ReverbClientStream stream = new ReverbClientStream(this, descriptor(method), headers, callOptions, tracers);
        final int linked = link(stream);
        if (linked != LINKED)
        {
            return linked == SHUT_DOWN ? failedStream(tracers) : reportInUse(stream);
        }
        return stream;
    }

    /** {@link #link}: the stream is one of this transport's now. */
    private static final int LINKED = 0;
    /** {@link #link}: the same, and the transport was not reported in use. */
    private static final int LINKED_NOW_IN_USE = 1;
    /** {@link #link}: the transport is shut down (the stream is not linked). */
    private static final int SHUT_DOWN = 2;

    /**
     * What StatsTraceContext.newClientContext does, without its object (and its AtomicBoolean) per call: the stream
     * calls the tracers itself.
     */
    private static void streamCreated(final ClientStreamTracer[] tracers, final Attributes attributes,
        final Metadata headers)
    {
        for (final ClientStreamTracer tracer : tracers)
        {
            tracer.streamCreated(attributes, headers);
        }
    }

    /**
     * @return {@link #LINKED}, {@link #LINKED_NOW_IN_USE} or {@link #SHUT_DOWN}.
     */
    private synchronized int link(final ReverbClientStream stream)
    {
        if (shutdown)
        {
            return SHUT_DOWN;
        }
        stream.nextLive = live;
        if (live != null)
        {
            live.previousLive = stream;
        }
        live = stream;
        stream.isLive = true;
        opened++;
        if (reportedInUse)
        {
            return LINKED;
        }
        reportedInUse = true;
        return LINKED_NOW_IN_USE;
    }

    private ClientStream reportInUse(final ReverbClientStream stream)
    {
        listener.transportInUse(true);
        return stream;
    }

    private synchronized ClientStream failedStream(final ClientStreamTracer[] tracers)
    {
        return new FailingClientStream(shutdownStatus, ClientStreamListener.RpcProgress.MISCARRIED, tracers);
    }

    // CHECKSTYLE.OFF: InlineFullyQualifiedName - Reverb's MethodDescriptor (see the field)
    private io.reverb.rpc.MethodDescriptor<InputStream, InputStream> descriptor(final MethodDescriptor<?, ?> method)
    {
        final io.reverb.rpc.MethodDescriptor<InputStream, InputStream> known = methods.get(method.getFullMethodName());
        return known != null ? known : methods.computeIfAbsent(
            method.getFullMethodName(), name -> GrpcBridge.descriptor(name, method.getType()));
    }
    // CHECKSTYLE.ON: InlineFullyQualifiedName

    void streamClosed(final ReverbClientStream stream)
    {
        final boolean idle;
        final boolean terminate;
        boolean linger = false;
        synchronized (this)
        {
            final boolean wasLive = stream.isLive;
            if (wasLive)
            {
                stream.isLive = false;
                if (stream.previousLive != null)
                {
                    stream.previousLive.nextLive = stream.nextLive;
                }
                else
                {
                    live = stream.nextLive;
                }
                if (stream.nextLive != null)
                {
                    stream.nextLive.previousLive = stream.previousLive;
                }
                stream.previousLive = null;
                stream.nextLive = null;
            }
            final boolean empty = wasLive && live == null;
            terminate = empty && shutdownNotified && !terminated;
            if (terminate)
            {
                terminated = true;
            }
            idle = empty && inUseTimer == null && reportedInUse;
            if (idle)
            {
                reportedInUse = false;
            }
            else if (empty && !lingering && !terminated)
            {
                lingering = linger = true;
                openedBeforeLinger = opened;
            }
        }
        if (idle)
        {
            listener.transportInUse(false);
        }
        if (linger)
        {
            scheduleLingerCheck();
        }
        if (terminate)
        {
            terminate();
        }
    }

    private void scheduleLingerCheck()
    {
        try
        {
            inUseTimer.schedule(this::lingerCheck, IN_USE_LINGER_MILLIS, TimeUnit.MILLISECONDS);
        }
        catch (final RejectedExecutionException e)
        {
            // grpc-java's timer is gone (its channel shut down): no wait, the check decides now
            lingerCheck();
        }
    }

    /**
     * On the timer: reports the transport no longer in use if no stream opened since the check was scheduled and none
     * is open; checks again later if streams came and went meanwhile; stops if one is open (its end schedules the next).
     * Reported under the lock (as OkHttp's transport does), so that a stream opening meanwhile reports in use after it.
     */
    private void lingerCheck()
    {
        boolean again = false;
        synchronized (this)
        {
            if (live != null || terminated || !reportedInUse)
            {
                lingering = false;
            }
            else if (opened != openedBeforeLinger)
            {
                openedBeforeLinger = opened;
                again = true;
            }
            else
            {
                lingering = false;
                reportedInUse = false;
                listener.transportInUse(false);
            }
        }
        if (again)
        {
            scheduleLingerCheck();
        }
    }

    @Override
    public void ping(final PingCallback callback, final Executor executor)
    {
        if (connection == null)
        {
            executor.execute(() -> callback.onFailure(cannotConnect));
            return;
        }
        // a Reverb PING on this connection (which also PINGs itself per its keep-alive settings)
        connection.ping().whenComplete((roundTripNanos, error) -> executor.execute(() ->
        {
            if (error == null)
            {
                callback.onSuccess(roundTripNanos);
            }
            else
            {
                callback.onFailure(GrpcBridge.statusOf(error instanceof CompletionException && error.getCause() != null ?
                    error.getCause() : error));
            }
        }));
    }

    @Override
    public void shutdown(final Status reason)
    {
        shutdown(reason, SimpleDisconnectError.SUBCHANNEL_SHUTDOWN);
    }

    /**
     * The Reverb connection takes no new streams (one of this transport's streams ended without leaving this client):
     * grpc-java hears that this transport is shut down before that stream's close, which grpc-java answers by sending
     * the call again (MISCARRIED, a transparent retry) on whatever transport its subchannel then gives.
     *
     * @param reason why the stream did not leave.
     */
    void refusesStreams(final Status reason)
    {
        shutdown(reason, SimpleDisconnectError.CONNECTION_RESET);
    }

    private void shutdown(final Status reason, final SimpleDisconnectError why)
    {
        synchronized (this)
        {
            if (shutdown)
            {
                return;
            }
            shutdown = true;
            shutdownStatus = reason;
            // Under the lock, as OkHttp's transport does: a stream that finds this transport shut down (newStream) or
            // its connection unusable (refusesStreams) fails MISCARRIED only once grpc-java was told, and grpc-java
            // resends such a call at once. Told later, its subchannel would still give this transport to the resent
            // call, which fails again: a loop that grpc-java ends after 1000 tries as INTERNAL "Too many transparent
            // retries" (GracefulReplacementTest on a loaded machine, when the thread that read the GOAWAY was
            // descheduled between the two).
            listener.transportShutdown(reason, why);
        }
        if (connection != null)
        {
            connection.shutdown(); // no new calls on it; it closes once the calls running on it end
        }
        final boolean terminate;
        synchronized (this)
        {
            // grpc-java requires transportShutdown before transportTerminated: only now may the last stream terminate
            shutdownNotified = true;
            terminate = live == null && !terminated;
            if (terminate)
            {
                terminated = true;
            }
        }
        if (terminate)
        {
            terminate();
        }
    }

    @Override
    public void shutdownNow(final Status reason)
    {
        shutdown(reason);
        final List<ReverbClientStream> open = new ArrayList<>();
        synchronized (this)
        {
            for (ReverbClientStream s = live; s != null; s = s.nextLive)
            {
                open.add(s);
            }
        }
        for (final ReverbClientStream stream : open)
        {
            stream.cancel(reason); // closes it: streamClosed takes the lock, so not under it
        }
    }

    private void terminate()
    {
        if (connection != null)
        {
            connection.close();
        }
        listener.transportTerminated();
    }

    @Override
    public Attributes getAttributes()
    {
        return attributes;
    }

    @Override
    public InternalLogId getLogId()
    {
        return logId;
    }

    @Override
    public ListenableFuture<InternalChannelz.SocketStats> getStats()
    {
        return Futures.immediateFuture(null); // no socket of its own to report
    }

    @Override
    public String toString()
    {
        return "ReverbClientTransport{" + address + "}";
    }
}
