package io.reverb.rpc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.protobuf.StringValue;
import io.reverb.rpc.protobuf.ProtoMarshaller;
import io.reverb.rpc.stub.ClientCalls;
import io.reverb.rpc.stub.ServerCalls;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;
import reactor.core.scheduler.Schedulers;

/**
 * {@link RpcServer.Builder#executor} with a thread pool (an {@code ExecutorService}): a call whose client gives up (its
 * deadline) while the handler blocks must not interrupt the handler (Reactor's executor-service worker, disposed from
 * another thread, cancelled its task with interruption: a JDBC connection or a virtual thread's socket broken mid-use).
 */
class HandlerExecutorTest
{
    private static final MethodDescriptor<StringValue, StringValue> BLOCK = MethodDescriptor
        .<StringValue, StringValue>newBuilder().type(MethodDescriptor.MethodType.UNARY)
        .fullMethodName(MethodDescriptor.generateFullMethodName("reverb.test.Blocking", "Block"))
        .requestMarshaller(ProtoMarshaller.of(StringValue.getDefaultInstance()))
        .responseMarshaller(ProtoMarshaller.of(StringValue.getDefaultInstance())).build();

    private static final MethodDescriptor<StringValue, StringValue> COUNT = MethodDescriptor
        .<StringValue, StringValue>newBuilder().type(MethodDescriptor.MethodType.CLIENT_STREAMING)
        .fullMethodName(MethodDescriptor.generateFullMethodName("reverb.test.Blocking", "Count"))
        .requestMarshaller(ProtoMarshaller.of(StringValue.getDefaultInstance()))
        .responseMarshaller(ProtoMarshaller.of(StringValue.getDefaultInstance())).build();

    /** What Reactor reported through its scheduler error hook (the thread's uncaught-exception handler after it). */
    private final AtomicInteger reportedToThreads = new AtomicInteger();
    private final ThreadPoolExecutor pool = (ThreadPoolExecutor)Executors.newFixedThreadPool(2);
    private final AtomicBoolean rejecting = new AtomicBoolean();
    /** The pool, until told to reject (a bounded queue full, an executor shutting down). */
    private final Executor executor = task ->
    {
        if (rejecting.get())
        {
            throw new RejectedExecutionException("the handler pool is full");
        }
        pool.execute(task);
    };

    @BeforeEach
    void hookSchedulerErrors()
    {
        Schedulers.onHandleError("handler-executor-test", (thread, t) -> reportedToThreads.incrementAndGet());
    }

    @AfterEach
    void unhook()
    {
        Schedulers.resetOnHandleError("handler-executor-test");
        pool.shutdownNow();
    }

    private void awaitIdlePool() throws InterruptedException
    {
        final long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while ((pool.getActiveCount() > 0 || !pool.getQueue().isEmpty()) && System.nanoTime() < until)
        {
            Thread.sleep(5);
        }
        assertThat(pool.getActiveCount()).isZero();
    }

    @Test
    void shouldEndAStreamingCallWhoseNextRequestTheExecutorRejects() throws Exception
    {
        final CountDownLatch firstSeen = new CountDownLatch(1);
        final String uri = "inproc://handler-executor-" + System.nanoTime();
        try (RpcServer server = RpcServer.builder(uri).executor(executor).addService(ServiceDefinition
                .builder("reverb.test.Blocking").addMethod(COUNT, ServerCalls.<StringValue, StringValue>clientStreaming(
                    requests -> requests.doOnNext(r -> firstSeen.countDown()).count()
                        .map(n -> StringValue.of(Long.toString(n))))).build()).build().start();
            RpcChannel channel = RpcChannel.builder(uri).build())
        {
            final Sinks.Many<StringValue> requests = Sinks.many().unicast().onBackpressureBuffer();
            final AtomicReference<Object> outcome = new AtomicReference<>();
            final CountDownLatch ended = new CountDownLatch(1);
            ClientCalls.clientStreaming(channel, COUNT, CallOptions.DEFAULT, requests.asFlux()).subscribe(
                outcome::set, t ->
                {
                    outcome.set(t);
                    ended.countDown();
                }, ended::countDown);
            requests.tryEmitNext(StringValue.of("a"));
            assertThat(firstSeen.await(20, TimeUnit.SECONDS)).isTrue();
            awaitIdlePool(); // the call's next request needs a new task on the executor
            rejecting.set(true);
            requests.tryEmitNext(StringValue.of("b"));
            requests.tryEmitComplete();

            assertThat(ended.await(20, TimeUnit.SECONDS)).as("the call ended").isTrue();
            assertThat(outcome.get()).isInstanceOf(RpcException.class);
            assertThat(((RpcException)outcome.get()).status().code()).isEqualTo(StatusCode.UNAVAILABLE);
            assertThat(reportedToThreads.get()).as("rejections printed on the transport's thread").isZero();
        }
    }

    @Test
    void shouldCloseAServerWhoseExecutorRejectsWhileItsCallsWait() throws Exception
    {
        final CountDownLatch started = new CountDownLatch(2);
        final String uri = "inproc://handler-executor-" + System.nanoTime();
        final RpcServer server = RpcServer.builder(uri).executor(executor).addService(ServiceDefinition
            .builder("reverb.test.Blocking").addMethod(BLOCK, ServerCalls.<StringValue, StringValue>unary(request ->
                Mono.<StringValue>never().doOnSubscribe(s -> started.countDown()))).build()).build().start();
        try (RpcChannel channel = RpcChannel.builder(uri).build())
        {
            final CountDownLatch ended = new CountDownLatch(2);
            final AtomicInteger unavailable = new AtomicInteger();
            for (int i = 0; i < 2; i++)
            {
                ClientCalls.unary(channel, BLOCK, CallOptions.DEFAULT, StringValue.of("x")).subscribe(
                    r -> { }, t ->
                    {
                        if (t instanceof RpcException && ((RpcException)t).status().code() == StatusCode.UNAVAILABLE)
                        {
                            unavailable.incrementAndGet();
                        }
                        ended.countDown();
                    }, ended::countDown);
            }
            assertThat(started.await(20, TimeUnit.SECONDS)).isTrue();
            awaitIdlePool();
            rejecting.set(true);

            server.close(); // ending each call schedules its worker's release: refused now, it must not stop the close
            assertThat(server.awaitTermination(20, TimeUnit.SECONDS)).isTrue();
            assertThat(ended.await(20, TimeUnit.SECONDS)).as("both calls ended").isTrue();
            assertThat(unavailable.get()).isEqualTo(2);
            assertThat(reportedToThreads.get()).isZero();
        }
        finally
        {
            server.close();
        }
    }

    @Test
    void shouldNotInterruptABlockingHandlerWhenItsCallEnds() throws Exception
    {
        final ExecutorService pool = Executors.newFixedThreadPool(4);
        final CountDownLatch entered = new CountDownLatch(1);
        final CountDownLatch release = new CountDownLatch(1);
        final AtomicInteger interrupted = new AtomicInteger();
        final CountDownLatch finished = new CountDownLatch(1);
        final String uri = "inproc://handler-executor-" + System.nanoTime();
        try (RpcServer server = RpcServer.builder(uri).executor(pool).addService(ServiceDefinition
                .builder("reverb.test.Blocking").addMethod(BLOCK, ServerCalls.<StringValue, StringValue>unary(request ->
                    Mono.fromCallable(() ->
                    {
                        entered.countDown();
                        try
                        {
                            release.await(); // a blocking call the handler makes (a database, a file)
                        }
                        catch (final InterruptedException e)
                        {
                            interrupted.incrementAndGet();
                        }
                        finally
                        {
                            finished.countDown();
                        }
                        return request;
                    }))).build()).build().start();
            RpcChannel channel = RpcChannel.builder(uri).build())
        {
            assertThatThrownBy(() -> ClientCalls.unary(channel, BLOCK,
                CallOptions.DEFAULT.withDeadlineAfter(Duration.ofMillis(100)), StringValue.of("x"))
                .block(Duration.ofSeconds(20))).isInstanceOf(RpcException.class);
            assertThat(entered.await(20, TimeUnit.SECONDS)).isTrue();
            // the server's own deadline timer ends the call too: give the end every chance to reach the worker
            final long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(2);
            while (System.nanoTime() < until && finished.getCount() > 0)
            {
                Thread.sleep(20);
            }
            release.countDown();
            assertThat(finished.await(20, TimeUnit.SECONDS)).isTrue();
            assertThat(interrupted.get()).as("the handler was interrupted").isZero();
        }
        finally
        {
            release.countDown();
            pool.shutdownNow();
        }
    }
}
