package ${package};

import io.reverb.rpc.RpcChannel;
import io.reverb.rpc.RpcServer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * Server and client over shared memory ({@code shm://}), in this JVM. Needs the --add-exports flag that the
 * pom gives Surefire.
 */
class GreeterTest
{
    private RpcServer server;
    private RpcChannel channel;

    @BeforeEach
    void start()
    {
        // A name of our own, so that two builds on one host do not meet.
        final String uri = "shm://${artifactId}-test-" + ProcessHandle.current().pid();
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
