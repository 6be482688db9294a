package io.reverb.examples.springboot;

import io.reverb.spring.boot.ReverbClient;
import java.time.Duration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnExpression;
import org.springframework.stereotype.Component;
import reactor.core.publisher.Mono;

/**
 * The caller: a stub of the channel named "greeter" ({@code reverb.client.channels.greeter.address}), injected.
 * Absent when the application only serves ({@code greeter.mode=server}).
 */
@Component
@ConditionalOnExpression("'${greeter.mode:demo}' != 'server'")
public class GreeterClient
{
    private static final Duration TIMEOUT = Duration.ofSeconds(10);

    @ReverbClient("greeter")
    private GreeterRpc.GreeterReactorStub greeter;

    /**
     * The call, not yet made: nothing is sent before the {@code Mono} is subscribed to. A reactive caller (a handler,
     * a WebFlux controller) returns or composes it; only a thread that may wait (a runner, a test) blocks on it. A
     * block on a transport's thread would hold every connection it serves.
     *
     * @param name who to greet.
     * @return the server's greeting, with a deadline of its own from when the call is made.
     */
    public Mono<String> greet(final String name)
    {
        return Mono.defer(() -> greeter.withDeadlineAfter(TIMEOUT)
            .sayHello(HelloRequest.newBuilder().setName(name).build())
            .map(HelloReply::getMessage));
    }
}
