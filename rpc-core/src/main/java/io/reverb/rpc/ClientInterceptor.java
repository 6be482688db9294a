package io.reverb.rpc;

import reactor.core.publisher.Flux;

/**
 * Intercepts calls on the client, around the transport. An interceptor can add to
 * {@link ClientCallContext#requestMetadata()} (before calling {@code next}), read the response headers, trailers
 * and status once they arrived, wrap the streams, or fail the call without sending it:
 *
 * <pre>{@code
 * public <Req, Resp> Flux<Resp> interceptCall(ClientCallContext call, Flux<Req> requests, Next<Req, Resp> next)
 * {
 *     call.requestMetadata().put(TOKEN, "secret");
 *     return next.call(requests);
 * }
 * }</pre>
 *
 * Interceptors run in the order added, the first added outermost, when the call is subscribed (nothing runs
 * before subscription).
 */
public interface ClientInterceptor
{
    /**
     * @param call     the call.
     * @param requests the requests.
     * @param next     the rest of the chain, ending with the transport.
     * @param <Req>    request type.
     * @param <Resp>   response type.
     * @return the responses.
     */
    <Req, Resp> Flux<Resp> interceptCall(ClientCallContext call, Flux<Req> requests, Next<Req, Resp> next);

    /**
     * The rest of a client interceptor chain.
     *
     * @param <Req>  request type.
     * @param <Resp> response type.
     */
    @FunctionalInterface
    interface Next<Req, Resp>
    {
        /**
         * @param requests the requests to send.
         * @return the responses.
         */
        Flux<Resp> call(Flux<Req> requests);
    }
}
