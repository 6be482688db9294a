package io.reverb.bench.fault;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.PipedReader;
import java.io.PipedWriter;
import java.io.PrintStream;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The driver's orders protocol end to end over loopback tcp (no root, no fault): a steady scenario and a fault
 * scenario whose server is "back" at once are judged, one row each, and pass; the channel leaves no buffer held.
 */
class FaultDriverTest
{
    private static final long MS = TimeUnit.MILLISECONDS.toNanos(1);

    @Test
    @Timeout(120)
    void shouldJudgeEachScenarioTheScriptAnnounces() throws Exception
    {
        final String uri;
        try (ServerSocket socket = new ServerSocket(0))
        {
            uri = "tcp://127.0.0.1:" + socket.getLocalPort();
        }
        final ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor();
        final HandlerLedger ledger = new HandlerLedger();
        final FaultStack.Server server = FaultStacks.startServer(FaultStack.NATIVE, uri, Duration.ofMillis(5), ledger, timer);
        final ByteArrayOutputStream printed = new ByteArrayOutputStream();
        final boolean passed;
        try (FaultStack.Client client = FaultStacks.connect(FaultStack.NATIVE, uri,
            new FaultStacks.ClientSettings(Duration.ofSeconds(10), Duration.ofSeconds(5))))
        {
            // a deadline no loaded machine misses: this test is about the protocol, not about time
            final FaultDriver driver = new FaultDriver(client, Duration.ofSeconds(30), Duration.ofMillis(5),
                new PhaseStats.Rules(30_000 * MS, 60_000 * MS, true), new PrintStream(printed, true, StandardCharsets.UTF_8));
            final PipedWriter script = new PipedWriter();
            final BufferedReader orders = new BufferedReader(new PipedReader(script));
            driver.start(4);
            final CompletableFuture<Boolean> control = CompletableFuture.supplyAsync(() ->
            {
                try
                {
                    return driver.control(orders);
                }
                catch (final Exception ex)
                {
                    throw new IllegalStateException(ex);
                }
            });
            // each order is followed only once the driver has acted on it (it reads them on another thread, which a
            // loaded machine may run late): 20 calls counted in the steady phase, then an OK call started after the
            // restore, before the next order
            script.write("phase steady steady\n");
            script.flush();
            awaitPhase(driver, "steady", phase -> phase.started() >= 20);
            script.write("phase crash fault\nrestored\n");
            script.flush();
            awaitPhase(driver, "crash", PhaseStats::okAfterRestore);
            script.write("end\n");
            script.flush();
            passed = control.get(60, TimeUnit.SECONDS);
        }
        finally
        {
            server.shutdown(Duration.ofSeconds(5));
            server.awaitTermination(Duration.ofSeconds(30));
            timer.shutdownNow();
        }
        final List<String> rows = Arrays.stream(printed.toString(StandardCharsets.UTF_8).split("\n"))
            .filter(line -> line.startsWith("ROW ")).toList();
        assertThat(rows).hasSize(2);
        assertThat(rows.get(0)).startsWith("ROW steady").endsWith("PASS");
        assertThat(rows.get(1)).startsWith("ROW crash").endsWith("PASS");
        assertThat(passed).isTrue();
        FaultStackTest.assertNoBuffersInUse(server);
    }

    private static void awaitPhase(final FaultDriver driver, final String name, final Predicate<PhaseStats> done)
        throws InterruptedException
    {
        PhaseStats phase;
        while ((phase = driver.currentPhase()) == null || !name.equals(phase.name()) || !done.test(phase))
        {
            Thread.sleep(10); // bounded by the test's timeout
        }
    }
}
