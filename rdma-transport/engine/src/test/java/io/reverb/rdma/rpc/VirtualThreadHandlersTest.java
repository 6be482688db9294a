package io.reverb.rdma.rpc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.google.protobuf.StringValue;
import io.reverb.rpc.CallOptions;
import io.reverb.rpc.MethodDescriptor;
import io.reverb.rpc.RpcChannel;
import io.reverb.rpc.RpcServer;
import io.reverb.rpc.ServiceDefinition;
import io.reverb.rpc.protobuf.ProtoMarshaller;
import io.reverb.rpc.stub.ServerCalls;
import io.reverb.rpc.testing.Await;
import io.reverb.rpc.testing.Jdks;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.lang.reflect.Method;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import reactor.core.publisher.Mono;

/**
 * Handlers on virtual threads ({@code .executor(Executors.newVirtualThreadPerTaskExecutor())}, Java 21+), over
 * {@code shm://}: a handler that blocks parks its virtual thread, never the engine's poller, so calls on the same
 * connection keep completing while many handlers block at once, more of them than there are carrier threads.
 *
 * <p>The build targets Java 17, so the virtual-thread API is reached by reflection; on a JDK without it the scenario
 * runs in a child JVM of a JDK 21+ found beside this one ({@link Jdks}: Temurin 25 under {@code /usr/lib/jvm} here),
 * and the test is skipped, with the cause, only where there is none. Nothing is timed: the blocked handlers are
 * counted, and the other calls either complete or the test fails on its timeout.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class VirtualThreadHandlersTest
{
    private static final AtomicInteger IDS = new AtomicInteger();
    private static final Duration TIMEOUT = Duration.ofSeconds(30);
    /** More blocked handlers than carrier threads (one per core): a handler pinning its carrier would show. */
    private static final int BLOCKED = Math.max(64, 8 * Runtime.getRuntime().availableProcessors());
    /** Calls made, one after another on the same connection, while every blocking handler waits. */
    private static final int FURTHER_CALLS = 50;
    private static final String SERVICE = "reverb.test.VirtualThreads";
    private static final String CHILD_PASSED = "virtual-thread handlers: passed";
    private static final Duration CHILD_TIMEOUT = Duration.ofSeconds(100);
    private static final MethodDescriptor<StringValue, StringValue> BLOCK = method("Block");
    private static final MethodDescriptor<StringValue, StringValue> ECHO = method("Echo");

    private final String uri = "shm://virtual-threads-" + ProcessHandle.current().pid() + "-" + IDS.incrementAndGet();
    private final CountDownLatch release = new CountDownLatch(1);
    private final AtomicInteger blocked = new AtomicInteger();
    private final AtomicInteger echoed = new AtomicInteger();
    /** The threads handlers ran on that were not virtual (the poller's, or any platform thread's): none expected. */
    private final Set<String> platformThreads = ConcurrentHashMap.newKeySet();
    private ExecutorService virtualThreads;
    private RpcServer server;
    private RpcChannel channel;

    private static MethodDescriptor<StringValue, StringValue> method(final String name)
    {
        return MethodDescriptor.<StringValue, StringValue>newBuilder()
            .type(MethodDescriptor.MethodType.UNARY)
            .fullMethodName(MethodDescriptor.generateFullMethodName(SERVICE, name))
            .requestMarshaller(ProtoMarshaller.of(StringValue.getDefaultInstance()))
            .responseMarshaller(ProtoMarshaller.of(StringValue.getDefaultInstance()))
            .build();
    }

    /** @return the JDK's {@code Executors.newVirtualThreadPerTaskExecutor()}, or null before Java 21. */
    private static ExecutorService newVirtualThreadPerTaskExecutor()
    {
        final Method factory;
        try
        {
            factory = Executors.class.getMethod("newVirtualThreadPerTaskExecutor");
        }
        catch (final NoSuchMethodException ex)
        {
            return null;
        }
        try
        {
            return (ExecutorService)factory.invoke(null);
        }
        catch (final ReflectiveOperationException ex)
        {
            throw new AssertionError("Executors.newVirtualThreadPerTaskExecutor() failed", ex);
        }
    }

    private static boolean isVirtual(final Thread thread)
    {
        try
        {
            return (Boolean)Thread.class.getMethod("isVirtual").invoke(thread);
        }
        catch (final ReflectiveOperationException ex)
        {
            return false; // before Java 21 every thread is a platform thread
        }
    }

    private void recordThread()
    {
        final Thread current = Thread.currentThread();
        if (!isVirtual(current))
        {
            platformThreads.add(current.getName());
        }
    }

    @BeforeEach
    void start()
    {
        virtualThreads = newVirtualThreadPerTaskExecutor();
        if (virtualThreads == null)
        {
            return; // the test runs in a child JVM of a JDK that has them
        }
        server = RpcServer.builder(uri)
            .addService(ServiceDefinition.builder(SERVICE)
                .addMethod(BLOCK, ServerCalls.unary(request ->
                {
                    recordThread();
                    blocked.incrementAndGet();
                    try
                    {
                        // plain blocking code, as a handler on virtual threads is written: no Mono.fromCallable
                        if (!release.await(TIMEOUT.toMillis(), TimeUnit.MILLISECONDS))
                        {
                            return Mono.error(new IllegalStateException("never released"));
                        }
                    }
                    catch (final InterruptedException ex)
                    {
                        Thread.currentThread().interrupt();
                        return Mono.error(ex);
                    }
                    return Mono.just(request);
                }))
                .addMethod(ECHO, ServerCalls.unary(request ->
                {
                    recordThread();
                    echoed.incrementAndGet();
                    return Mono.just(request);
                }))
                .build())
            .executor(virtualThreads)
            .build()
            .start();
        channel = RpcChannel.builder(uri).build();
    }

    @AfterEach
    void stop() throws InterruptedException
    {
        release.countDown();
        if (channel != null)
        {
            channel.close();
        }
        if (server != null)
        {
            server.shutdown(Duration.ZERO);
            assertThat(server.awaitTermination(TIMEOUT)).isTrue();
        }
        if (virtualThreads != null)
        {
            virtualThreads.shutdownNow();
            assertThat(virtualThreads.awaitTermination(TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)).isTrue();
        }
    }

    @Test
    void blockedHandlersOnVirtualThreadsShouldNeverHoldThePollerSoFurtherCallsOnTheConnectionComplete() throws Exception
    {
        if (virtualThreads == null)
        {
            runInAChildJvmWithVirtualThreads();
            return;
        }
        blockedHandlersShouldNotHoldThePoller();
    }

    /**
     * The child JVM's entry point: the test's scenario, with its checks, on this JVM (a JDK 21+).
     *
     * @param args none.
     * @throws Exception never: a failure prints its trace and exits with 1.
     */
    public static void main(final String[] args) throws Exception
    {
        int status = 1;
        final VirtualThreadHandlersTest test = new VirtualThreadHandlersTest();
        try
        {
            test.start();
            if (test.virtualThreads == null)
            {
                throw new AssertionError("Java " + Runtime.version().feature() + " has no virtual threads");
            }
            try
            {
                test.blockedHandlersShouldNotHoldThePoller();
            }
            finally
            {
                test.stop();
            }
            System.out.println(CHILD_PASSED);
            status = 0;
        }
        catch (final Throwable t)
        {
            t.printStackTrace();
        }
        System.exit(status);
    }

    /** Before Java 21 (the build's 17): the scenario runs in a child JVM of a JDK 21+ found beside this one. */
    private static void runInAChildJvmWithVirtualThreads() throws Exception
    {
        final Path java = Jdks.javaAtLeast(21);
        final String cause = "Executors.newVirtualThreadPerTaskExecutor is Java 21+: " + Jdks.noneFound(21);
        if (java == null)
        {
            System.out.println("VirtualThreadHandlersTest skipped: " + cause);
        }
        assumeTrue(java != null, cause);
        final List<String> command = new ArrayList<>(List.of(java.toString()));
        command.addAll(ManagementFactory.getRuntimeMXBean().getInputArguments().stream()
            .filter(arg -> arg.startsWith("--add-") || arg.startsWith("-Xmx") || arg.startsWith("-Dreverb."))
            .collect(Collectors.toList()));
        command.addAll(List.of("-cp", System.getProperty("java.class.path"), VirtualThreadHandlersTest.class.getName()));
        final Path output = Files.createTempFile("virtual-threads-child-", ".txt");
        try
        {
            final Process child = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(output.toFile())
                .start();
            final boolean exited = child.waitFor(CHILD_TIMEOUT.toSeconds(), TimeUnit.SECONDS);
            child.destroyForcibly();
            final List<String> lines = Files.readAllLines(output, StandardCharsets.UTF_8);
            System.out.println("VirtualThreadHandlersTest ran on " + java + ": " +
                (lines.contains(CHILD_PASSED) ? CHILD_PASSED : "see its output below"));
            assertThat(exited).as("the child JVM exited within %s; its output:%n%s", CHILD_TIMEOUT,
                String.join("\n", lines)).isTrue();
            assertThat(child.exitValue()).as("the child JVM's exit status; its output:%n%s", String.join("\n", lines))
                .isZero();
            assertThat(lines).contains(CHILD_PASSED);
        }
        finally
        {
            Files.deleteIfExists(output);
        }
    }

    private void blockedHandlersShouldNotHoldThePoller()
    {
        final List<Mono<StringValue>> blocking = new ArrayList<>();
        for (int i = 0; i < BLOCKED; i++)
        {
            final Mono<StringValue> call = channel.newUnaryCall(BLOCK, CallOptions.DEFAULT, StringValue.of("b" + i))
                .cache();
            call.subscribe(v -> { }, e -> { });
            blocking.add(call);
        }
        // every blocking handler is inside its handler at once: more than the carrier threads, so none pins one
        Await.until("all " + BLOCKED + " handlers blocked together", TIMEOUT, () -> blocked.get() == BLOCKED);

        // the poller still reads and answers this connection: each call completes while all of them stay blocked
        for (int i = 0; i < FURTHER_CALLS; i++)
        {
            final StringValue reply = channel.newUnaryCall(ECHO, CallOptions.DEFAULT, StringValue.of("e" + i))
                .block(TIMEOUT);
            assertThat(reply).isEqualTo(StringValue.of("e" + i));
        }
        assertThat(echoed.get()).isEqualTo(FURTHER_CALLS);
        assertThat(release.getCount()).as("the blocking handlers were still blocked").isEqualTo(1);

        release.countDown();
        for (int i = 0; i < BLOCKED; i++)
        {
            assertThat(blocking.get(i).block(TIMEOUT)).isEqualTo(StringValue.of("b" + i));
        }
        assertThat(platformThreads).as("handlers that ran on a platform thread (the poller's or another)").isEmpty();
    }
}
