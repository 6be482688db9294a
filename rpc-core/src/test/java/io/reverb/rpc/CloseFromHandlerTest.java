package io.reverb.rpc;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.StringValue;
import io.reverb.rpc.protobuf.ProtoMarshaller;
import io.reverb.rpc.stub.ClientCalls;
import io.reverb.rpc.stub.ServerCalls;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Mono;

/**
 * {@link RpcServer#close()} called from one of its own handlers (an admin "shutdown" method) running on the
 * transport's thread: that thread delivers the close of its connection only once the handler returns, so a close
 * that waited for termination there waited its whole 5 s, and every connection of that thread stalled with it. It
 * returns at once now (grpc-java's {@code shutdownNow} never waits), and the server terminates once the handler is
 * done. The 5 s wait is fixed, so the bound below cannot be met by a close that waits, however loaded the machine.
 */
class CloseFromHandlerTest
{
    private static final MethodDescriptor<StringValue, StringValue> STOP = MethodDescriptor
        .<StringValue, StringValue>newBuilder().type(MethodDescriptor.MethodType.UNARY)
        .fullMethodName(MethodDescriptor.generateFullMethodName("reverb.test.Admin", "Stop"))
        .requestMarshaller(ProtoMarshaller.of(StringValue.getDefaultInstance()))
        .responseMarshaller(ProtoMarshaller.of(StringValue.getDefaultInstance())).build();

    @Test
    void shouldNotWaitForItselfWhenAHandlerClosesItsServer() throws Exception
    {
        final String uri = "inproc://close-from-handler-" + System.nanoTime();
        final AtomicReference<RpcServer> serverRef = new AtomicReference<>();
        final AtomicLong closeNanos = new AtomicLong(-1);
        final RpcServer server = RpcServer.builder(uri).addService(ServiceDefinition.builder("reverb.test.Admin")
            .addMethod(STOP, ServerCalls.<StringValue, StringValue>unary(request -> Mono.fromCallable(() ->
            {
                final long start = System.nanoTime();
                serverRef.get().close();
                closeNanos.set(System.nanoTime() - start);
                return request;
            }))).build()).build();
        serverRef.set(server);
        server.start();
        try (RpcChannel channel = RpcChannel.builder(uri).build())
        {
            final CountDownLatch ended = new CountDownLatch(1);
            ClientCalls.unary(channel, STOP, CallOptions.DEFAULT, StringValue.of("stop")).subscribe(r -> { },
                t -> ended.countDown(), ended::countDown);
            assertThat(ended.await(20, TimeUnit.SECONDS)).as("the client's call ended").isTrue();
            assertThat(server.awaitTermination(20, TimeUnit.SECONDS)).as("the server terminated").isTrue();
            assertThat(closeNanos.get()).as("close() in the handler ran").isNotNegative();
            assertThat(TimeUnit.NANOSECONDS.toMillis(closeNanos.get())).as("close() in the handler waited (ms)")
                .isLessThan(4_000);
        }
        finally
        {
            server.close();
        }
    }
}
