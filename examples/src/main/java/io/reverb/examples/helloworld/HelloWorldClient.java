package io.reverb.examples.helloworld;

import io.reverb.examples.Uris;
import io.reverb.rpc.RpcChannel;

import java.time.Duration;

/**
 * Calls {@code Greeter.SayHello} once: {@code HelloWorldClient [uri] [name]}.
 */
public final class HelloWorldClient
{
    private HelloWorldClient()
    {
    }

    /**
     * @param channel a channel to a Greeter server.
     * @param name    who to greet.
     * @return the greeting.
     */
    public static String greet(final RpcChannel channel, final String name)
    {
        final GreeterRpc.GreeterReactorStub greeter = GreeterRpc.newReactorStub(channel)
            .withDeadlineAfter(Duration.ofSeconds(5));
        return greeter.sayHello(HelloRequest.newBuilder().setName(name).build())
            .map(HelloReply::getMessage)
            .block();
    }

    /**
     * @param args optional URI and name.
     */
    public static void main(final String[] args)
    {
        final String uri = Uris.uriFrom(args, HelloWorldServer.DEFAULT_URI);
        final String name = args.length > 1 ? args[1] : "world";
        try (RpcChannel channel = RpcChannel.builder(uri).build())
        {
            System.out.println(greet(channel, name));
        }
    }
}
