package io.reverb.examples.springboot;

import io.reverb.spring.boot.ReverbClient;
import java.time.Duration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnExpression;
import org.springframework.stereotype.Component;

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
     * @param name who to greet.
     * @return the server's greeting.
     */
    public String greet(final String name)
    {
        return greeter.withDeadlineAfter(TIMEOUT)
            .sayHello(HelloRequest.newBuilder().setName(name).build())
            .map(HelloReply::getMessage)
            .block();
    }
}
