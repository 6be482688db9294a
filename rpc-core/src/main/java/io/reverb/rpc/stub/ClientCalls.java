package io.reverb.rpc.stub;

import io.reverb.rpc.CallOptions;
import io.reverb.rpc.MethodDescriptor;
import io.reverb.rpc.RpcChannel;
import io.reverb.rpc.internal.ClientCallStarter;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * What generated stubs call: the four kinds of call as {@code Mono}/{@code Flux}. Each is lazy: nothing is sent
 * before subscription; cancelling the subscription cancels the call on the server.
 */
public final class ClientCalls
{
    private ClientCalls()
    {
    }

    /**
     * @param channel the channel.
     * @param method  a UNARY method.
     * @param options call options.
     * @param request the request.
     * @param <Req>   request type.
     * @param <Resp>  response type.
     * @return the response.
     */
    public static <Req, Resp> Mono<Resp> unary(
        final RpcChannel channel, final MethodDescriptor<Req, Resp> method, final CallOptions options, final Req request)
    {
        return channel.newUnaryCall(method, options, request);
    }

    /**
     * @param channel the channel.
     * @param method  a UNARY method.
     * @param options call options.
     * @param request the request, subscribed when the call starts.
     * @param <Req>   request type.
     * @param <Resp>  response type.
     * @return the response.
     */
    public static <Req, Resp> Mono<Resp> unary(
        final RpcChannel channel, final MethodDescriptor<Req, Resp> method, final CallOptions options, final Mono<Req> request)
    {
        return single(channel.newCall(method, options, request), method);
    }

    /**
     * @param channel the channel.
     * @param method  a SERVER_STREAMING method.
     * @param options call options.
     * @param request the request.
     * @param <Req>   request type.
     * @param <Resp>  response type.
     * @return the responses.
     */
    public static <Req, Resp> Flux<Resp> serverStreaming(
        final RpcChannel channel, final MethodDescriptor<Req, Resp> method, final CallOptions options, final Req request)
    {
        return channel.newCall(method, options, Mono.just(request));
    }

    /**
     * @param channel the channel.
     * @param method  a SERVER_STREAMING method.
     * @param options call options.
     * @param request the request.
     * @param <Req>   request type.
     * @param <Resp>  response type.
     * @return the responses.
     */
    public static <Req, Resp> Flux<Resp> serverStreaming(
        final RpcChannel channel, final MethodDescriptor<Req, Resp> method, final CallOptions options, final Mono<Req> request)
    {
        return channel.newCall(method, options, request);
    }

    /**
     * @param channel  the channel.
     * @param method   a CLIENT_STREAMING method.
     * @param options  call options.
     * @param requests the requests, pulled as the server asks for them.
     * @param <Req>    request type.
     * @param <Resp>   response type.
     * @return the response.
     */
    public static <Req, Resp> Mono<Resp> clientStreaming(
        final RpcChannel channel, final MethodDescriptor<Req, Resp> method, final CallOptions options, final Flux<Req> requests)
    {
        return single(channel.newCall(method, options, requests), method);
    }

    /**
     * @param channel  the channel.
     * @param method   a BIDI_STREAMING method.
     * @param options  call options.
     * @param requests the requests, pulled as the server asks for them.
     * @param <Req>    request type.
     * @param <Resp>   response type.
     * @return the responses.
     */
    public static <Req, Resp> Flux<Resp> bidiStreaming(
        final RpcChannel channel, final MethodDescriptor<Req, Resp> method, final CallOptions options, final Flux<Req> requests)
    {
        return channel.newCall(method, options, requests);
    }

    private static <Resp> Mono<Resp> single(final Flux<Resp> responses, final MethodDescriptor<?, Resp> method)
    {
        return ClientCallStarter.unaryResult(method, responses);
    }
}
