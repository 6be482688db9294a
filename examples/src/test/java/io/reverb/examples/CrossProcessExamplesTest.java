package io.reverb.examples;

import io.reverb.examples.helloworld.HelloWorldClient;
import io.reverb.examples.helloworld.HelloWorldServer;
import io.reverb.examples.inference.InferenceClient;
import io.reverb.examples.inference.InferenceServer;
import io.reverb.examples.routeguide.RouteGuideClient;
import io.reverb.examples.routeguide.RouteGuideServer;
import io.reverb.rpc.RpcChannel;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Each example's server {@code main} in its own JVM, as a user starts it, and its client in this one,
 * over {@code shm://} (processes on one host): skipped, with the reason, where no rpc transport serves
 * {@code shm://}.
 */
class CrossProcessExamplesTest
{
    private static final long STARTUP_TIMEOUT_SECONDS = 60;

    private Process server;

    @AfterEach
    void stopServer() throws InterruptedException
    {
        if (null != server)
        {
            server.destroy();
            if (!server.waitFor(20, TimeUnit.SECONDS))
            {
                server.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
            }
        }
    }

    @Test
    void shouldGreetHelloWorldServerInAnotherProcess() throws Exception
    {
        final String uri = startServer(HelloWorldServer.class, "cross-hello");
        try (RpcChannel channel = RpcChannel.builder(uri).build())
        {
            assertThat(HelloWorldClient.greet(channel, "process")).isEqualTo("Hello, process!");
        }
    }

    @Test
    void shouldTourRouteGuideServerInAnotherProcess() throws Exception
    {
        final String uri = startServer(RouteGuideServer.class, "cross-routeguide");
        try (RpcChannel channel = RpcChannel.builder(uri).build())
        {
            final List<String> lines = new RouteGuideClient(channel).tour();
            assertThat(lines).hasSize(5);
            assertThat(lines.get(0)).isEqualTo("GetFeature: 'Place 1-2' at (40.1000000, -73.8000000)");
            assertThat(lines.get(4)).isEqualTo("RouteChat: [first, second]");
        }
    }

    @Test
    void shouldSendTensorsToInferenceServerInAnotherProcess() throws Exception
    {
        final String uri = startServer(InferenceServer.class, "cross-inference");
        try (RpcChannel channel = RpcChannel.builder(uri).build())
        {
            final InferenceClient.Result result = InferenceClient.run(channel, 3);
            assertThat(result.bestRows()).containsExactly(
                InferenceClient.expectedBestRow(0), InferenceClient.expectedBestRow(1), InferenceClient.expectedBestRow(2));
        }
    }

    /**
     * Starts {@code mainClass} with a fresh shm URI as its argument, and waits for its "listening on" line.
     */
    private String startServer(final Class<?> mainClass, final String name) throws IOException, InterruptedException
    {
        final String uri = ExampleTransports.uri("shm", name);
        final String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        final String classPath = System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
        server = new ProcessBuilder(java, "--add-exports", "java.base/jdk.internal.misc=ALL-UNNAMED",
            "-cp", classPath + File.pathSeparator + System.getProperty("java.class.path"),
            mainClass.getName(), uri)
            .redirectErrorStream(true)
            .start();

        final CompletableFuture<String> listening = new CompletableFuture<>();
        final Thread reader = new Thread(() ->
        {
            try (BufferedReader lines =
                new BufferedReader(new InputStreamReader(server.getInputStream(), StandardCharsets.UTF_8)))
            {
                String line;
                while (null != (line = lines.readLine()))
                {
                    System.out.println("[" + mainClass.getSimpleName() + "] " + line);
                    if (line.contains(" listening on "))
                    {
                        listening.complete(line);
                    }
                }
            }
            catch (final IOException ex)
            {
                listening.completeExceptionally(ex);
            }
            listening.completeExceptionally(new IllegalStateException(mainClass.getSimpleName() + " exited before listening"));
        }, "example-server-output");
        reader.setDaemon(true);
        reader.start();

        try
        {
            assertThat(listening.get(STARTUP_TIMEOUT_SECONDS, TimeUnit.SECONDS))
                .endsWith("listening on " + uri + " (Ctrl-C to stop)");
        }
        catch (final ExecutionException | TimeoutException ex)
        {
            throw new AssertionError(mainClass.getSimpleName() + " did not start: " + ex, ex);
        }
        return uri;
    }
}
