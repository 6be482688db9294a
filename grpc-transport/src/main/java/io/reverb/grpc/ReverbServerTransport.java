package io.reverb.grpc;

import com.google.common.util.concurrent.Futures;
import com.google.common.util.concurrent.ListenableFuture;
import io.grpc.Attributes;
import io.grpc.Grpc;
import io.grpc.InternalChannelz;
import io.grpc.InternalLogId;
import io.grpc.Metadata;
import io.grpc.SecurityLevel;
import io.grpc.Status;
import io.grpc.internal.GrpcAttributes;
import io.grpc.internal.ServerTransport;
import io.grpc.internal.ServerTransportListener;
import io.reverb.rpc.AcceptedConnection;

import java.util.concurrent.ScheduledExecutorService;
import javax.net.ssl.SSLSession;

/**
 * grpc-java's server transport over one Reverb connection that a {@link ReverbServer} accepted, as Netty's server
 * transport is one accepted channel: created when the connection is accepted (its transport handshake done), ready at
 * once with the connection's attributes, given every call of that connection as a stream, terminated when the
 * connection ends. {@link #shutdown()} is the connection's GOAWAY (its calls finish, then it closes);
 * {@link #shutdownNow} ends its calls with the reason and closes it.
 *
 * <p>Lifecycle, as grpc-java's {@code ServerTransportListener} requires: {@code transportCreated} and
 * {@code transportReady} on the accepting thread before the connection's first call reaches its handler (rpc-core's
 * {@link AcceptedConnection.Listener} guarantee), then {@code streamCreated} per call, then
 * {@code transportTerminated} once, after the connection closed.
 */
final class ReverbServerTransport implements ServerTransport
{
    private final ReverbServer server;
    private final AcceptedConnection connection;
    private final InternalLogId logId;
    private final ReverbAddress remoteAddress;
    private volatile ReverbAddress localAddress;
    private volatile ServerTransportListener listener;
    /** What grpc-java's server returned from transportReady (its transport filters' additions): every stream's. */
    private volatile Attributes streamAttributes = Attributes.EMPTY;
    private boolean terminated;

    ReverbServerTransport(final ReverbServer server, final AcceptedConnection connection)
    {
        this.server = server;
        this.connection = connection;
        this.remoteAddress = new ReverbAddress(connection.remoteAddress());
        this.localAddress = server.address();
        this.logId = InternalLogId.allocate(ReverbServerTransport.class, remoteAddress.toString());
    }

    /**
     * Tells grpc-java's server that the transport is ready, with the connection's attributes. If its transport
     * filters throw, the transport is terminated at once (grpc-java's server forgets it) and the exception goes on
     * (rpc-core then refuses the connection).
     *
     * @param transportListener what grpc-java's server returned from transportCreated.
     * @param boundAddress      the server's address (the local address of every connection).
     */
    void start(final ServerTransportListener transportListener, final ReverbAddress boundAddress)
    {
        this.listener = transportListener;
        this.localAddress = boundAddress;
        // inside TLS as over Netty's: the session (the client's certificates under mutual TLS) and privacy
        final SSLSession tls = connection.sslSession();
        final Attributes.Builder builder = Attributes.newBuilder()
            .set(Grpc.TRANSPORT_ATTR_REMOTE_ADDR, ReverbAddress.ofPeer(remoteAddress.uri()))
            .set(Grpc.TRANSPORT_ATTR_LOCAL_ADDR, ReverbAddress.ofPeer(boundAddress.uri()))
            .set(GrpcAttributes.ATTR_SECURITY_LEVEL, tls != null ? SecurityLevel.PRIVACY_AND_INTEGRITY :
                boundAddress.securityLevel());
        if (tls != null)
        {
            builder.set(Grpc.TRANSPORT_ATTR_SSL_SESSION, tls);
        }
        final Attributes attributes = builder.build();
        try
        {
            streamAttributes = transportListener.transportReady(attributes);
        }
        catch (final RuntimeException | Error e)
        {
            terminated();
            throw e;
        }
    }

    /**
     * @return the attributes of every stream of this transport (what grpc-java's server made of transportReady).
     */
    Attributes streamAttributes()
    {
        return streamAttributes;
    }

    /**
     * Hands a call of this connection to grpc-java's server.
     *
     * @param stream  the call's stream.
     * @param method  its full method name.
     * @param headers its headers.
     */
    void streamCreated(final ReverbServerStream stream, final String method, final Metadata headers)
    {
        listener.streamCreated(stream, method, headers);
    }

    /** The connection ended: grpc-java's server is told once. */
    void terminated()
    {
        synchronized (this)
        {
            if (terminated)
            {
                return;
            }
            terminated = true;
        }
        listener.transportTerminated();
    }

    @Override
    public void shutdown()
    {
        connection.goAway();
    }

    @Override
    public void shutdownNow(final Status reason)
    {
        final Status status = reason.isOk() ? Status.UNAVAILABLE.withDescription("server transport shut down") : reason;
        connection.closeNow(GrpcBridge.toReverb(status));
    }

    @Override
    public ScheduledExecutorService getScheduledExecutorService()
    {
        return server.timer();
    }

    @Override
    public InternalLogId getLogId()
    {
        return logId;
    }

    @Override
    public ListenableFuture<InternalChannelz.SocketStats> getStats()
    {
        // the connection's two ends; Reverb keeps no socket-level counters grpc-java's channelz would show
        return Futures.immediateFuture(new InternalChannelz.SocketStats(null, localAddress, remoteAddress,
            new InternalChannelz.SocketOptions.Builder().build(), null));
    }

    @Override
    public String toString()
    {
        return "ReverbServerTransport{" + remoteAddress + " -> " + localAddress + "}";
    }
}
