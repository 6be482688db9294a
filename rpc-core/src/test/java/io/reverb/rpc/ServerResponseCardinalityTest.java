package io.reverb.rpc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.protobuf.StringValue;
import io.reverb.common.counters.CounterValue;
import io.reverb.common.counters.ProcessCounters;
import io.reverb.rpc.protobuf.ProtoMarshaller;
import io.reverb.rpc.stub.ClientCalls;
import io.reverb.rpc.stub.ServerCalls;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * A method that answers once (unary, client-streaming) whose handler completes without a response, or emits two,
 * ends INTERNAL on the server ("Completed without a response", "Too many responses"), as grpc-java's server ends it,
 * not OK: the server's counters, metrics and interceptors recorded an OK call that its client reported as INTERNAL,
 * and with two responses both were sent.
 */
class ServerResponseCardinalityTest
{
    private static final AtomicInteger IDS = new AtomicInteger();
    private static final Duration TIMEOUT = Duration.ofSeconds(20);
    private static final String SERVICE = "reverb.test.Once";

    private final String uri = "inproc://server-cardinality-" + IDS.incrementAndGet();
    private ProcessCounters process;
    private RpcServer server;
    private RpcChannel channel;

    private static MethodDescriptor<StringValue, StringValue> method(final String name,
        final MethodDescriptor.MethodType type)
    {
        return MethodDescriptor.<StringValue, StringValue>newBuilder().type(type)
            .fullMethodName(MethodDescriptor.generateFullMethodName(SERVICE, name))
            .requestMarshaller(ProtoMarshaller.of(StringValue.getDefaultInstance()))
            .responseMarshaller(ProtoMarshaller.of(StringValue.getDefaultInstance())).build();
    }

    private static final MethodDescriptor<StringValue, StringValue> EMPTY =
        method("Empty", MethodDescriptor.MethodType.UNARY);
    private static final MethodDescriptor<StringValue, StringValue> TWO =
        method("Two", MethodDescriptor.MethodType.UNARY);
    private static final MethodDescriptor<StringValue, StringValue> TWO_COLLECTED =
        method("TwoCollected", MethodDescriptor.MethodType.CLIENT_STREAMING);
    private static final MethodDescriptor<StringValue, StringValue> ONE =
        method("One", MethodDescriptor.MethodType.UNARY);
    private static final MethodDescriptor<StringValue, StringValue> ONE_RAW =
        method("OneRaw", MethodDescriptor.MethodType.UNARY);

    @BeforeEach
    void start()
    {
        process = ProcessCounters.acquire();
        final ServerCallHandler<StringValue, StringValue> two = requests -> requests.thenMany(
            Flux.just(StringValue.of("first"), StringValue.of("second")));
        server = RpcServer.builder(uri).addService(ServiceDefinition.builder(SERVICE)
                .addMethod(EMPTY, ServerCalls.<StringValue, StringValue>unary(request -> Mono.empty()))
                .addMethod(TWO, two)
                .addMethod(TWO_COLLECTED, two)
                .addMethod(ONE, ServerCalls.<StringValue, StringValue>unary(Mono::just))
                .addMethod(ONE_RAW, (ServerCallHandler<StringValue, StringValue>)requests -> requests).build())
            .build().start();
        channel = RpcChannel.builder(uri).build();
    }

    @AfterEach
    void close()
    {
        channel.close();
        server.close();
        process.release();
    }

    /** @return the server's count of the method's calls finished with that status, once it is there (or 0). */
    private long finished(final MethodDescriptor<?, ?> method, final StatusCode code)
    {
        final String group = "server " + uri + " " + method.fullMethodName();
        final String name = "calls finished " + code;
        final long giveUp = System.nanoTime() + TIMEOUT.toNanos();
        long value = 0;
        while (value == 0 && System.nanoTime() - giveUp < 0)
        {
            value = process.view().counters().stream().filter(c -> c.group().equals(group) && c.name().equals(name))
                .mapToLong(CounterValue::value).sum();
            if (value == 0)
            {
                LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(5));
            }
        }
        return value;
    }

    private static void assertInternal(final Mono<StringValue> call, final String description)
    {
        assertThatThrownBy(() -> call.block(TIMEOUT)).isInstanceOfSatisfying(RpcException.class, e ->
        {
            assertThat(e.status().code()).isEqualTo(StatusCode.INTERNAL);
            assertThat(e.status().description()).isEqualTo(description);
        });
    }

    @Test
    void shouldEndAUnaryCallWhoseHandlerCompletesEmptyInternal()
    {
        assertInternal(ClientCalls.unary(channel, EMPTY, CallOptions.DEFAULT, StringValue.of("x")),
            "Completed without a response");
        assertThat(finished(EMPTY, StatusCode.INTERNAL)).isEqualTo(1);
        // recorded once, as INTERNAL: not also as OK
        assertThat(process.view().counters()).noneMatch(c -> c.group().equals("server " + uri + " " +
            EMPTY.fullMethodName()) && c.name().equals("calls finished OK") && c.value() > 0);
    }

    @Test
    void shouldEndACallWhoseHandlerAnswersTwiceInternal()
    {
        assertInternal(ClientCalls.unary(channel, TWO, CallOptions.DEFAULT, StringValue.of("x")),
            "Too many responses");
        assertInternal(ClientCalls.clientStreaming(channel, TWO_COLLECTED, CallOptions.DEFAULT,
            Flux.just(StringValue.of("a"), StringValue.of("b"))), "Too many responses");
        assertThat(finished(TWO, StatusCode.INTERNAL)).isEqualTo(1);
        assertThat(finished(TWO_COLLECTED, StatusCode.INTERNAL)).isEqualTo(1);
    }

    @Test
    void shouldStillAnswerOnceAsBefore()
    {
        assertThat(ClientCalls.unary(channel, ONE, CallOptions.DEFAULT, StringValue.of("x")).block(TIMEOUT)
            .getValue()).isEqualTo("x");
        assertThat(finished(ONE, StatusCode.OK)).isEqualTo(1);
    }

    @Test
    void shouldAnswerThroughAStreamHandler()
    {
        assertThat(ClientCalls.unary(channel, ONE_RAW, CallOptions.DEFAULT, StringValue.of("x")).block(TIMEOUT)
            .getValue()).isEqualTo("x");
    }
}
