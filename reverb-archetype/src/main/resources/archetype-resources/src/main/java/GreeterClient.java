package ${package};

import io.reverb.rpc.RpcChannel;

import java.time.Duration;
import java.util.List;

/**
 * Calls {@code Greeter} once of each kind: {@code GreeterClient [uri] [name]}.
 */
public final class GreeterClient
{
    private final GreeterRpc.GreeterReactorStub greeter;

    /**
     * @param channel a channel to a Greeter server.
     */
    public GreeterClient(final RpcChannel channel)
    {
        this.greeter = GreeterRpc.newReactorStub(channel);
    }

    /**
     * Stubs are immutable, and a deadline is a moment fixed when the stub is made (as in gRPC): each call takes a stub
     * of its own, so that each has 5 s. A stub made once with a deadline and kept would fail every call after it.
     *
     * @return the stub with a deadline 5 s from now.
     */
    private GreeterRpc.GreeterReactorStub call()
    {
        return greeter.withDeadlineAfter(Duration.ofSeconds(5));
    }

    /**
     * The unary call. Nothing is sent before the {@code Mono} is subscribed to: {@code block()} subscribes
     * and waits, which is what a {@code main} or a test wants. Reactive code returns the {@code Mono}, or
     * calls {@code subscribe(...)}, instead, and never blocks a transport or Reactor thread.
     *
     * @param name who to greet.
     * @return the greeting.
     */
    public String greet(final String name)
    {
        return call().sayHello(HelloRequest.newBuilder().setName(name).build())
            .map(HelloReply::getMessage)
            .block();
    }

    /**
     * The server-streaming call: the replies, collected.
     *
     * @param name  who to greet.
     * @param times how many greetings to ask for.
     * @return the greetings in the order they arrived.
     */
    public List<String> greetRepeatedly(final String name, final int times)
    {
        return call().sayHelloRepeatedly(RepeatedHelloRequest.newBuilder().setName(name).setTimes(times).build())
            .map(HelloReply::getMessage)
            .collectList()
            .block();
    }

    /**
     * @param args optional URI and name.
     */
    public static void main(final String[] args)
    {
        final String uri = args.length > 0 ? args[0] : GreeterServer.DEFAULT_URI;
        final String name = args.length > 1 ? args[1] : "world";
        try (RpcChannel channel = RpcChannel.builder(uri).build())
        {
            final GreeterClient client = new GreeterClient(channel);
            System.out.println(client.greet(name));
            client.greetRepeatedly(name, 3).forEach(System.out::println);
        }
    }
}
