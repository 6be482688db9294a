package io.reverb.examples.helloworld;

import io.reverb.examples.ExampleTransports;
import io.reverb.rpc.RpcChannel;
import io.reverb.rpc.RpcServer;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

import static org.assertj.core.api.Assertions.assertThat;

class HelloWorldExampleTest
{
    @ParameterizedTest(name = "{0}")
    @MethodSource("io.reverb.examples.ExampleTransports#schemes")
    void shouldGreetThroughTheClient(final String scheme)
    {
        final String uri = ExampleTransports.uri(scheme, "hello");
        try (RpcServer server = HelloWorldServer.start(uri);
            RpcChannel channel = RpcChannel.builder(server.address()).build())
        {
            assertThat(HelloWorldClient.greet(channel, "reverb")).isEqualTo("Hello, reverb!");
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("io.reverb.examples.ExampleTransports#schemes")
    void shouldPrintTheGreetingFromTheClientMain(final String scheme)
    {
        final String uri = ExampleTransports.uri(scheme, "hello-main");
        final PrintStream stdout = System.out;
        final ByteArrayOutputStream captured = new ByteArrayOutputStream();
        try (RpcServer server = HelloWorldServer.start(uri))
        {
            System.setOut(new PrintStream(captured, true, StandardCharsets.UTF_8));
            HelloWorldClient.main(new String[] {server.address(), "main"});
        }
        finally
        {
            System.setOut(stdout);
        }
        assertThat(captured.toString(StandardCharsets.UTF_8)).isEqualTo("Hello, main!" + System.lineSeparator());
    }
}
