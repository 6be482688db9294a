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
 * <p>The build targets Java 17, so the virtual-thread API is reached by reflection, and the test is skipped, with the
 * cause, on a JDK without it ({@code bin/test-jdks} runs it on 25). Nothing is timed: the blocked handlers are
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

    /** @return the JDK's {@code Executors.newVirtualThreadPerTaskExecutor()}; the test is skipped without it. */
    private static ExecutorService newVirtualThreadPerTaskExecutor()
    {
        final Method factory;
        try
        {
            factory = Executors.class.getMethod("newVirtualThreadPerTaskExecutor");
        }
        catch (final NoSuchMethodException ex)
        {
            final String cause = "Java " + Runtime.version().feature() + " has no virtual threads " +
                "(Executors.newVirtualThreadPerTaskExecutor is Java 21+); bin/test-jdks runs this test on 25";
            System.out.println("VirtualThreadHandlersTest skipped: " + cause);
            assumeTrue(false, cause);
            throw new AssertionError(cause, ex);
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
    void blockedHandlersOnVirtualThreadsShouldNeverHoldThePollerSoFurtherCallsOnTheConnectionComplete()
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
