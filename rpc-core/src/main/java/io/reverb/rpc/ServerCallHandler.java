package io.reverb.rpc;

import org.reactivestreams.Publisher;
import reactor.core.publisher.Flux;

/**
 * Server side of one method: turns the stream of requests into the stream of responses. All four kinds of call
 * share this shape; {@code io.reverb.rpc.stub.ServerCalls} adapts the {@code Mono}/{@code Flux} functions that
 * generated code and users write.
 *
 * <p>The handler is invoked once per call when the call arrives. Demand on {@code requests} travels to the
 * client as REQUEST_N; the runtime requests from the returned publisher only as much as the client asked for.
 * Cancelling the call cancels the subscription to the returned publisher. The call's {@link RpcContext} is in
 * the subscriber's Reactor context.
 *
 * @param <Req>  request type.
 * @param <Resp> response type.
 */
@FunctionalInterface
public interface ServerCallHandler<Req, Resp>
{
    /**
     * @param requests the client's messages; subscribe at most once.
     * @return the responses; an error ends the call with {@link Status#fromThrowable(Throwable)}.
     */
    Publisher<Resp> handle(Flux<Req> requests);

    /**
     * A handler of a one-request method that can also be invoked with the request itself. Without interceptors the
     * runtime calls {@link #invoke} directly instead of going through a request {@code Flux} (fewer objects per
     * call); {@code io.reverb.rpc.stub.ServerCalls#unary} returns one.
     *
     * @param <Req>  request type.
     * @param <Resp> response type.
     */
    interface Unary<Req, Resp> extends ServerCallHandler<Req, Resp>
    {
        /**
         * @param request the request.
         * @return the response.
         */
        Publisher<Resp> invoke(Req request);
    }
}
