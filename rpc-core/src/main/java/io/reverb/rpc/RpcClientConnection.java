package io.reverb.rpc;

import java.util.concurrent.CompletableFuture;
import java.util.function.Consumer;
import javax.net.ssl.SSLSession;
import org.reactivestreams.Publisher;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * One Reverb connection to one address: the connection-level API that bridges build on (reverb-grpc makes one
 * grpc-java {@code ClientTransport} of each), as the channel's own subchannels are built on the same connection code.
 *
 * <p>One connection, one attempt: it connects once ({@link #connect()}), and when the connection is lost or the server
 * sends GOAWAY it takes no new calls and never reconnects. Reconnecting with backoff, picking among addresses and
 * retrying belong to whoever owns connections (an {@link RpcChannel}'s subchannels, or grpc-java's). It does keep
 * itself alive: the settings' keep-alive PINGs the server and closes the connection when a PING goes unanswered.
 *
 * <p>States: {@link State#IDLE} until {@link #connect()} (or the first call), {@link State#CONNECTING},
 * {@link State#READY}, then {@link State#DRAINING} once it takes no new calls while calls still run (GOAWAY from the
 * server, {@link #shutdown()}), and {@link State#CLOSED}. A failed attempt goes from CONNECTING to CLOSED.
 *
 * <p>A call started while the connection is still connecting waits for it (bounded by its deadline); a call started
 * when the connection takes no new calls fails at once with UNAVAILABLE and a
 * {@link io.reverb.rpc.retry.CallFailureCause} saying the server never saw it (safe to send elsewhere). Refused calls
 * are never sent again on this connection: the owner decides.
 */
public interface RpcClientConnection extends AutoCloseable
{
    /**
     * A connection's life.
     */
    enum State
    {
        /** Made, not yet asked to connect. */
        IDLE,
        /** Connecting (the transport's handshake). */
        CONNECTING,
        /** Takes new calls. */
        READY,
        /** Takes no new calls (GOAWAY, {@link #shutdown()}, stream ids used up); calls already running continue. */
        DRAINING,
        /** Closed, or the attempt to connect failed. */
        CLOSED
    }

    /**
     * Makes a connection (not yet connected) with the connection-level settings of {@code settings}: its single
     * address, interceptors, default deadline, inbound message limit, metrics, keep-alive, timer scheduler and
     * transport options. Its reconnect backoff and transparent retry do not apply to a single connection.
     *
     * @param settings a builder of {@link RpcChannel#builder(String)} with one transport address.
     * @return the connection.
     * @throws IllegalArgumentException if the settings name several addresses or a resolver target, or ask for load
     *                                  balancing, health checking, retries or hedging (those need a channel).
     */
    static RpcClientConnection create(final RpcChannel.Builder settings)
    {
        return RpcImplementation.get().newConnection(settings);
    }

    /**
     * @return the address.
     */
    String uri();

    /**
     * @return the state now.
     */
    State state();

    /**
     * Connects (the first time it is called; later calls return the same future).
     *
     * @return completes when the connection takes calls; fails with an {@link RpcException} (UNAVAILABLE, or
     * UNAUTHENTICATED when either side refused the other's credentials) when it cannot connect or was closed first.
     */
    CompletableFuture<Void> connect();

    /**
     * Starts a call on this connection when the returned Flux is subscribed.
     *
     * @param method   the method.
     * @param options  call options.
     * @param requests the requests.
     * @param <Req>    request type.
     * @param <Resp>   response type.
     * @return the responses.
     */
    <Req, Resp> Flux<Resp> newCall(MethodDescriptor<Req, Resp> method, CallOptions options, Publisher<Req> requests);

    /**
     * {@link #newCall(MethodDescriptor, CallOptions, Publisher)} for a bridge that reports the server's response
     * headers, trailers and status itself: they are recorded into {@code context} before the returned Flux signals.
     * The interceptors run with that context; without interceptors the call takes the direct path. The request
     * metadata sent is {@link ClientCallContext#requestMetadata()}.
     *
     * @param method   the method.
     * @param options  call options.
     * @param requests the requests.
     * @param context  receives what the server answered; one call per context.
     * @param <Req>    request type.
     * @param <Resp>   response type.
     * @return the responses.
     */
    <Req, Resp> Flux<Resp> newCall(MethodDescriptor<Req, Resp> method, CallOptions options, Publisher<Req> requests,
        ClientCallContext context);

    /**
     * A unary call on this connection: the request travels with the CALL frame.
     *
     * @param method  the method.
     * @param options call options.
     * @param request the request.
     * @param <Req>   request type.
     * @param <Resp>  response type.
     * @return the response.
     */
    <Req, Resp> Mono<Resp> newUnaryCall(MethodDescriptor<Req, Resp> method, CallOptions options, Req request);

    /**
     * {@link #newUnaryCall(MethodDescriptor, CallOptions, Object)} recording the server's response headers, trailers
     * and status into {@code context}.
     *
     * @param method  the method.
     * @param options call options.
     * @param request the request.
     * @param context receives what the server answered; one call per context.
     * @param <Req>   request type.
     * @param <Resp>  response type.
     * @return the response.
     */
    <Req, Resp> Mono<Resp> newUnaryCall(MethodDescriptor<Req, Resp> method, CallOptions options, Req request,
        ClientCallContext context);

    /**
     * This end of the connection, once connected, as the server names it: {@code tcp://10.0.0.7:52100} (the socket's
     * own address; over {@code rdma://} its connection handshake's socket), this process ({@code shm://pid:42}) where
     * the transport has no socket.
     *
     * @return the address, or null: not connected (yet, or any more). The default: null.
     */
    default String localAddress()
    {
        return null;
    }

    /**
     * The TLS session of the connection, once connected: {@code getPeerCertificates()} is the server's certificate
     * chain (grpc-java's clients see the same session as {@code Grpc.TRANSPORT_ATTR_SSL_SESSION}).
     *
     * @return the session, or null: not connected (yet, or any more), or a connection without TLS. The default: null.
     */
    default SSLSession sslSession()
    {
        return null;
    }

    /**
     * Sends a PING (an owner may run its own keep-alive on it, as grpc-java's transports do on theirs). A server that
     * enforces a keep-alive policy counts it like any other PING.
     *
     * @return completes with the round trip in nanoseconds when the server answers; fails with an
     * {@link RpcException} (UNAVAILABLE) when the connection is not connected or closes first. No timeout of its own.
     */
    CompletableFuture<Long> ping();

    /**
     * @param listener runs once, on a transport or timer thread, when this connection stops taking new calls after
     *                 it was READY (GOAWAY from the server, a failure, a keep-alive timeout, {@link #shutdown()},
     *                 {@link #close()}), with the reason; at once if that already happened. One listener: it replaces
     *                 the previous one.
     */
    void onLost(Consumer<Status> listener);

    /**
     * Graceful shutdown: takes no new calls; the connection closes when the calls running on it have ended.
     */
    void shutdown();

    /**
     * Closes the connection now: calls running on it fail with UNAVAILABLE.
     */
    @Override
    void close();
}
