package ${package};

import io.reverb.rpc.RpcChannel;
import io.reverb.rpc.RpcServer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * Server and client in this JVM over {@code reverb://} (which settles on shared memory here). Needs the
 * --add-exports flag that the pom gives Surefire.
 */
class GreeterTest
{
    private RpcServer server;
    private RpcChannel channel;

    @BeforeEach
    void start()
    {
        // Port 0: a port of our own, so that two builds on one host do not meet.
        final String uri = "reverb://127.0.0.1:0";
        server = GreeterServer.start(uri);
        channel = RpcChannel.builder(server.address()).build();
    }

    @AfterEach
    void stop()
    {
        channel.close();
        server.close();
    }

    @Test
    void shouldGreetOnce()
    {
        assertEquals("Hello, Ada!", new GreeterClient(channel).greet("Ada"));
    }

    @Test
    void shouldStreamOneGreetingPerTimeAsked()
    {
        assertEquals(List.of("Hello #1, Ada!", "Hello #2, Ada!", "Hello #3, Ada!"),
            new GreeterClient(channel).greetRepeatedly("Ada", 3));
    }
}
