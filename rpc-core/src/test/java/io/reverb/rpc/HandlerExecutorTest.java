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
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Mono;

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
