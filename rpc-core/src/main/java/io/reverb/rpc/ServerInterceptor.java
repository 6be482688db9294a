package io.reverb.rpc;

import org.reactivestreams.Publisher;
import reactor.core.publisher.Flux;

/**
 * Intercepts calls on the server, around the handler. An interceptor can read {@link RpcContext#metadata()},
 * add to {@link RpcContext#responseHeaders()} and {@link RpcContext#responseTrailers()}, wrap the request and
 * response streams, or fail the call without invoking the handler:
 *
 * <pre>{@code
 * public <Req, Resp> Publisher<Resp> interceptCall(RpcContext ctx, Flux<Req> requests, ServerCallHandler<Req, Resp> next)
 * {
 *     if (!"secret".equals(ctx.metadata().get(TOKEN)))
 *     {
 *         return Flux.error(Status.UNAUTHENTICATED.withDescription("bad token").asException());
 *     }
 *     return next.handle(requests);
 * }
 * }</pre>
 *
 * Interceptors run in the order added: the first added is outermost. They are invoked on the thread that
 * invokes handlers.
 */
public interface ServerInterceptor
{
    /**
     * @param context  the call.
     * @param requests the client's messages.
     * @param next     the rest of the chain, ending with the handler.
     * @param <Req>    request type.
     * @param <Resp>   response type.
     * @return the responses.
     */
    <Req, Resp> Publisher<Resp> interceptCall(RpcContext context, Flux<Req> requests, ServerCallHandler<Req, Resp> next);
}
