package io.reverb.rdma.rpc.failover;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.Int32Value;
import com.google.protobuf.StringValue;
import io.reverb.rpc.CallOptions;
import io.reverb.rpc.MethodDescriptor;
import io.reverb.rpc.RpcChannel;
import io.reverb.rpc.Status;
import io.reverb.rpc.StatusCode;
import io.reverb.rpc.lb.ConnectivityState;
import io.reverb.rpc.retry.RetryPolicy;
import io.reverb.rpc.transport.Transports;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Three replicas in separate processes behind one {@link RpcChannel} built with their three addresses, a steady stream of calls from several
 * concurrent loops, while one replica is SIGKILLed, another drained with {@code shutdown(grace)}, and both restarted
 * at the same addresses. Counted: no idempotent call fails; the only non-idempotent failures are connection losses
 * (calls in flight on the killed process), at most one per loop; every replica serves again after the restart;
 * every buffer is back at the end.
 */
abstract class AbstractFailoverTest
{
    private static final Duration TIMEOUT = Duration.ofSeconds(30);
    private static final int LOOPS = 4;
    private static final int CALLS_PER_PHASE = 300;

    private final Process[] replicas = new Process[3];
    private final List<String> uris = new ArrayList<>();
    private RpcChannel channel;
    private final AtomicBoolean stop = new AtomicBoolean();
    private final AtomicInteger idemOk = new AtomicInteger();
    private final AtomicInteger nonIdemOk = new AtomicInteger();
    private final Queue<Status> idemFailures = new ConcurrentLinkedQueue<>();
    private final Queue<Status> nonIdemFailures = new ConcurrentLinkedQueue<>();
    private final AtomicIntegerArray servedBy = new AtomicIntegerArray(3);
    private CountDownLatch loopsDone;

    /**
     * @param index replica 0, 1 or 2.
     * @return its address, stable across restarts.
     * @throws Exception if none can be found.
     */
    protected abstract String replicaUri(int index) throws Exception;

    /**
     * @return the JVM options a child needs for this transport.
     */
    protected List<String> childJvmOptions()
    {
        return List.of();
    }

    @AfterEach
    void tearDown() throws Exception
    {
        stop.set(true);
        if (channel != null)
        {
            channel.close();
        }
        for (final Process p : replicas)
        {
            if (p != null)
            {
                p.destroyForcibly();
                p.waitFor(30, TimeUnit.SECONDS);
            }
        }
    }

    private Process startReplica(final int index) throws Exception
    {
        final List<String> command = new ArrayList<>(List.of(System.getProperty("java.home") + "/bin/java",
            "--add-exports", "java.base/jdk.internal.misc=ALL-UNNAMED", "-Xmx128m"));
        command.addAll(childJvmOptions());
        command.addAll(List.of("-cp", System.getProperty("java.class.path"), ReplicaMain.class.getName(),
            uris.get(index), Integer.toString(index)));
        final Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        final BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
        String line;
        while ((line = out.readLine()) != null && !line.startsWith("READY"))
        {
            System.out.println("[replica " + index + "] " + line);
        }
        assertThat(line).as("replica " + index + " came up").isNotNull();
        final Thread drain = new Thread(() ->
            out.lines().limit(200).forEach(l -> System.out.println("[replica " + index + "] " + l)));
        drain.setDaemon(true);
        drain.start();
        return p;
    }

    private void callLoop()
    {
        final Thread t = new Thread(() ->
        {
            int i = 0;
            while (!stop.get())
            {
                final boolean idem = (i++ & 1) == 0;
                final MethodDescriptor<StringValue, Int32Value> method = idem ? ReplicaMain.IDEM : ReplicaMain.NON_IDEM;
                try
                {
                    final Int32Value who = channel.newUnaryCall(method, CallOptions.DEFAULT.withDeadlineAfter(TIMEOUT),
                        StringValue.of("x")).block(TIMEOUT);
                    servedBy.incrementAndGet(who.getValue());
                    (idem ? idemOk : nonIdemOk).incrementAndGet();
                }
                catch (final RuntimeException e)
                {
                    (idem ? idemFailures : nonIdemFailures).add(Status.fromThrowable(e));
                }
            }
            loopsDone.countDown();
        }, "failover-calls");
        t.setDaemon(true);
        t.start();
    }

    private int total()
    {
        return idemOk.get() + nonIdemOk.get() + idemFailures.size() + nonIdemFailures.size();
    }

    private void awaitMoreCalls(final int more)
    {
        final int target = total() + more;
        await(more + " more calls", () -> total() >= target);
    }

    private static void await(final String what, final BooleanSupplier condition)
    {
        final long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (!condition.getAsBoolean())
        {
            assertThat(System.nanoTime() - end).as("timed out waiting for: " + what).isNegative();
            try
            {
                Thread.sleep(5);
            }
            catch (final InterruptedException e)
            {
                Thread.currentThread().interrupt();
                throw new AssertionError(e);
            }
        }
    }

    private long ready()
    {
        return channel.balancer().subchannels().stream().filter(s -> s.state() == ConnectivityState.READY).count();
    }

    @Test
    void shouldKeepServingThroughKillDrainAndRestart() throws Exception
    {
        for (int i = 0; i < 3; i++)
        {
            uris.add(replicaUri(i));
            replicas[i] = startReplica(i);
        }
        channel = RpcChannel.builder(uris).loadBalancingPolicy("round_robin").healthCheck("")
            .retryPolicy(ReplicaMain.IDEM.fullMethodName(), RetryPolicy.builder().maxAttempts(5)
                .backoff(Duration.ofMillis(5), Duration.ofMillis(100), 2).retryableCodes(StatusCode.UNAVAILABLE).build())
            .build();
        await("three replicas ready", () -> ready() == 3);
        loopsDone = new CountDownLatch(LOOPS);
        for (int i = 0; i < LOOPS; i++)
        {
            callLoop();
        }
        awaitMoreCalls(CALLS_PER_PHASE);

        replicas[0].destroyForcibly(); // SIGKILL
        assertThat(replicas[0].waitFor(30, TimeUnit.SECONDS)).isTrue();
        awaitMoreCalls(CALLS_PER_PHASE);

        final PrintStream control = new PrintStream(replicas[1].getOutputStream(), true, StandardCharsets.UTF_8);
        control.println("drain");
        assertThat(replicas[1].waitFor(30, TimeUnit.SECONDS)).as("drained replica exits").isTrue();
        assertThat(replicas[1].exitValue()).isZero();
        awaitMoreCalls(CALLS_PER_PHASE);

        replicas[0] = startReplica(0);
        replicas[1] = startReplica(1);
        await("three replicas ready again", () -> ready() == 3);
        final int[] before = {servedBy.get(0), servedBy.get(1), servedBy.get(2)};
        awaitMoreCalls(CALLS_PER_PHASE);
        stop.set(true);
        assertThat(loopsDone.await(TIMEOUT.toSeconds(), TimeUnit.SECONDS)).isTrue();

        assertThat(idemFailures).as("idempotent calls failed").isEmpty();
        assertThat(nonIdemFailures.size()).as("non-idempotent failures: only calls in flight on the killed replica")
            .isLessThanOrEqualTo(LOOPS);
        assertThat(nonIdemFailures).allSatisfy(s ->
        {
            assertThat(s.code()).isEqualTo(StatusCode.UNAVAILABLE);
            assertThat(s.description()).startsWith("connection");
        });
        for (int i = 0; i < 3; i++)
        {
            assertThat(servedBy.get(i)).as("replica " + i + " serves after the restart").isGreaterThan(before[i]);
        }
        System.out.println("failover over " + uris + ": idempotent ok " + idemOk + ", non-idempotent ok " + nonIdemOk +
            ", non-idempotent failed " + nonIdemFailures.size() + " " + nonIdemFailures);

        channel.close();
        await("every buffer back", () ->
            Transports.providerFor(Transports.parse(uris.get(0))).resourceUsage().buffersInUse() == 0);
    }
}
