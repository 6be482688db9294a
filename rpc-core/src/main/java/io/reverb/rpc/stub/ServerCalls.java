package io.reverb.rpc.stub;

import io.reverb.rpc.MethodDescriptor;
import io.reverb.rpc.RpcException;
import io.reverb.rpc.ServerCallHandler;
import io.reverb.rpc.Status;
import java.util.Objects;
import java.util.function.Function;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * Adapts the {@code Mono}/{@code Flux} functions of generated service bases to {@link ServerCallHandler}s.
 * An exception thrown by a function ends the call like an emitted error.
 */
public final class ServerCalls
{
    private ServerCalls()
    {
    }

    /**
     * @param method the method (one request, one response).
     * @param <Req>  request type.
     * @param <Resp> response type.
     * @return a handler.
     */
    public static <Req, Resp> ServerCallHandler<Req, Resp> unary(final Function<Req, Mono<Resp>> method)
    {
        return new UnaryHandler<>(method);
    }

    /**
     * A unary handler. The runtime recognises it and, when no interceptor wraps it, calls {@link #invoke} with the
     * request directly instead of going through a request {@code Flux} (fewer objects per call).
     *
     * @param <Req>  request type.
     * @param <Resp> response type.
     */
    public static final class UnaryHandler<Req, Resp> implements ServerCallHandler.Unary<Req, Resp>
    {
        private final Function<Req, Mono<Resp>> method;

        UnaryHandler(final Function<Req, Mono<Resp>> method)
        {
            this.method = Objects.requireNonNull(method, "method");
        }

        @Override
        public Mono<Resp> invoke(final Req request)
        {
            return method.apply(request);
        }

        @Override
        public Mono<Resp> handle(final Flux<Req> requests)
        {
            return singleRequest(requests).flatMap(method);
        }
    }

    /**
     * @param method the method (one request, many responses).
     * @param <Req>  request type.
     * @param <Resp> response type.
     * @return a handler.
     */
    public static <Req, Resp> ServerCallHandler<Req, Resp> serverStreaming(final Function<Req, Flux<Resp>> method)
    {
        return requests -> singleRequest(requests).flatMapMany(method);
    }

    /**
     * @param method the method (many requests, one response).
     * @param <Req>  request type.
     * @param <Resp> response type.
     * @return a handler.
     */
    public static <Req, Resp> ServerCallHandler<Req, Resp> clientStreaming(final Function<Flux<Req>, Mono<Resp>> method)
    {
        return requests -> Mono.defer(() -> method.apply(requests));
    }

    /**
     * @param method the method (streams both ways).
     * @param <Req>  request type.
     * @param <Resp> response type.
     * @return a handler.
     */
    public static <Req, Resp> ServerCallHandler<Req, Resp> bidiStreaming(final Function<Flux<Req>, Flux<Resp>> method)
    {
        return requests -> Flux.defer(() -> method.apply(requests));
    }

    /**
     * @param method a method without implementation.
     * @return UNIMPLEMENTED, "Method pkg.Service/M is unimplemented".
     */
    public static RpcException unimplemented(final MethodDescriptor<?, ?> method)
    {
        return Status.UNIMPLEMENTED.withDescription("Method " + method.fullMethodName() + " is unimplemented").asException();
    }

    private static <Req> Mono<Req> singleRequest(final Flux<Req> requests)
    {
        return requests
            .singleOrEmpty()
            .onErrorMap(IndexOutOfBoundsException.class,
                e -> Status.INTERNAL.withDescription("Too many requests for a single-request method").asException())
            .switchIfEmpty(Mono.error(() -> Status.INTERNAL.withDescription("Half-closed without a request").asException()));
    }
}
