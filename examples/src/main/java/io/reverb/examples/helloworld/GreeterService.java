package io.reverb.examples.helloworld;

import reactor.core.publisher.Mono;

/**
 * The greeter: answers every {@code SayHello} with a greeting.
 */
public final class GreeterService extends GreeterRpc.GreeterImplBase
{
    @Override
    public Mono<HelloReply> sayHello(final HelloRequest request)
    {
        return Mono.just(HelloReply.newBuilder().setMessage("Hello, " + request.getName() + "!").build());
    }
}
