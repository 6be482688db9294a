package io.reverb.examples;

import io.reverb.rpc.RpcServer;

import java.time.Duration;
import java.util.concurrent.CountDownLatch;

/**
 * Runs a started server until the process is interrupted (Ctrl-C), then shuts it down gracefully.
 */
public final class ServerLauncher
{
    private ServerLauncher()
    {
    }

    /**
     * @param name   what the server serves, for the console.
     * @param server a started server.
     * @throws InterruptedException if interrupted while waiting.
     */
    public static void runUntilShutdown(final String name, final RpcServer server) throws InterruptedException
    {
        final CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() ->
        {
            // the JVM ends when its hooks return: wait here for the calls in flight (the builder's grace period, then
            // the rest cancelled), or shutdown() would only have started the drain
            server.shutdown();
            try
            {
                server.awaitTermination(Duration.ofSeconds(30));
            }
            catch (final InterruptedException ex)
            {
                Thread.currentThread().interrupt();
            }
            stopped.countDown();
        }, "reverb-example-shutdown"));
        System.out.println(name + " listening on " + server.address() + " (Ctrl-C to stop)");
        stopped.await();
    }
}
