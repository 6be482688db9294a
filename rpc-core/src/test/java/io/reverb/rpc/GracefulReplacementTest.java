package io.reverb.rpc;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.StringValue;
import io.reverb.rpc.protobuf.ProtoMarshaller;
import io.reverb.rpc.retry.AttemptFailure;
import io.reverb.rpc.retry.CallFailureCause;
import io.reverb.rpc.stub.ServerCalls;
import io.reverb.rpc.testing.Await;
import io.reverb.rpc.transport.inproc.InprocTransportProvider;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;

/**
 * A server shut down gracefully while another takes its address (issue 25, item 5): calls the old server refused
 * (sent after its GOAWAY's last stream id) are resent transparently to the new one, and calls the old one started
 * finish there. Deterministic over {@code inproc://}: the old server's end is frozen while the client sends, so those
 * calls reach it only after its GOAWAY went out. The handlers count where each call ran: exactly once each.
 */
class GracefulReplacementTest
{
    private static final AtomicInteger IDS = new AtomicInteger();
    private static final Duration TIMEOUT = Duration.ofSeconds(20);
    private static final MethodDescriptor<StringValue, StringValue> CALL = MethodDescriptor.<StringValue, StringValue>newBuilder()
        .type(MethodDescriptor.MethodType.UNARY)
        .fullMethodName(MethodDescriptor.generateFullMethodName("reverb.test.Replace", "Call"))
        .requestMarshaller(ProtoMarshaller.of(StringValue.getDefaultInstance()))
        .responseMarshaller(ProtoMarshaller.of(StringValue.getDefaultInstance()))
        .build();
    private static final MethodDescriptor<StringValue, StringValue> STREAM =
        MethodDescriptor.<StringValue, StringValue>newBuilder()
        .type(MethodDescriptor.MethodType.SERVER_STREAMING)
        .fullMethodName(MethodDescriptor.generateFullMethodName("reverb.test.Replace", "Stream"))
        .requestMarshaller(ProtoMarshaller.of(StringValue.getDefaultInstance()))
        .responseMarshaller(ProtoMarshaller.of(StringValue.getDefaultInstance()))
        .build();

    private final String name = "replace-" + IDS.incrementAndGet();
    private final String uri = "inproc://" + name;
    private final Sinks.Empty<Void> gate = Sinks.empty();
    private final List<RpcServer> servers = new ArrayList<>();
    private RpcChannel channel;

    /** A server that answers its name, and holds calls asking "hold" until the gate opens. */
    private RpcServer server(final String id, final AtomicInteger handled)
    {
        final RpcServer server = RpcServer.builder(uri).addService(ServiceDefinition.builder("reverb.test.Replace")
            .addMethod(CALL, ServerCalls.unary(r ->
            {
                handled.incrementAndGet();
                final Mono<StringValue> answer = Mono.just(StringValue.of(id));
                return r.getValue().equals("hold") ? gate.asMono().then(answer) : answer;
            }))
            .addMethod(STREAM, ServerCalls.serverStreaming(r ->
            {
                handled.incrementAndGet();
                return Flux.just(StringValue.of(id), StringValue.of(id + "-" + r.getValue()), StringValue.of(id));
            })).build()).shutdownGracePeriod(TIMEOUT).build().start();
        servers.add(server);
        return server;
    }

    @AfterEach
    void tearDown() throws InterruptedException
    {
        InprocTransportProvider.freezeServer(name, false);
        gate.tryEmitEmpty();
        if (channel != null)
        {
            channel.close();
        }
        for (final RpcServer server : servers)
        {
            server.shutdown(Duration.ZERO);
            assertThat(server.awaitTermination(TIMEOUT)).isTrue();
        }
    }

    /**
     * Wait-for-ready: a call resent while nothing listens at the address yet (between the old server closing its
     * listener and the new one binding) waits for the new server instead of failing fast, as in gRPC.
     */
    private CompletableFuture<StringValue> call(final String what)
    {
        return channel.newUnaryCall(CALL, CallOptions.DEFAULT.withDeadlineAfter(TIMEOUT).withWaitForReady(),
            StringValue.of(what)).toFuture();
    }

    @Test
    void callsRefusedByADrainingServerShouldGoToItsReplacementAndStartedOnesShouldFinish() throws Exception
    {
        final AtomicInteger handledByOld = new AtomicInteger();
        final AtomicInteger handledByNew = new AtomicInteger();
        final RpcServer old = server("old", handledByOld);
        channel = RpcChannel.builder(uri).build();
        final CompletableFuture<StringValue> started = call("hold");
        Await.until("the held call runs on the old server", TIMEOUT, () -> handledByOld.get() == 1);

        // these leave while the old server reads nothing: they reach it after its GOAWAY, which names the held call
        InprocTransportProvider.freezeServer(name, true);
        final List<CompletableFuture<StringValue>> refused = new ArrayList<>();
        for (int i = 0; i < 20; i++)
        {
            refused.add(call("x" + i));
        }
        // server-streaming calls too: their one request is kept and goes again
        final List<CompletableFuture<List<StringValue>>> refusedStreams = new ArrayList<>();
        for (int i = 0; i < 5; i++)
        {
            refusedStreams.add(channel.newCall(STREAM, CallOptions.DEFAULT.withDeadlineAfter(TIMEOUT).withWaitForReady(),
                Mono.just(StringValue.of("s" + i))).collectList().toFuture());
        }
        old.shutdown(TIMEOUT);
        server("new", handledByNew);
        InprocTransportProvider.freezeServer(name, false);

        for (final CompletableFuture<StringValue> f : refused)
        {
            assertThat(f.get(TIMEOUT.toSeconds(), TimeUnit.SECONDS)).as("resent to the new server")
                .isEqualTo(StringValue.of("new"));
        }
        for (int i = 0; i < refusedStreams.size(); i++)
        {
            assertThat(refusedStreams.get(i).get(TIMEOUT.toSeconds(), TimeUnit.SECONDS)).as("stream resent")
                .containsExactly(StringValue.of("new"), StringValue.of("new-s" + i), StringValue.of("new"));
        }
        assertThat(handledByNew.get()).isEqualTo(refused.size() + refusedStreams.size());
        assertThat(handledByOld.get()).as("the old server ran only the call it had started").isEqualTo(1);
        assertThat(started).as("the started call still runs on the draining server").isNotDone();
        gate.tryEmitEmpty();
        assertThat(started.get(TIMEOUT.toSeconds(), TimeUnit.SECONDS)).isEqualTo(StringValue.of("old"));
        assertThat(old.awaitTermination(TIMEOUT)).as("the old server drained").isTrue();
    }

    @Test
    void refusedCallsFailAsRefusedWhenTransparentRetryIsOff() throws Exception
    {
        final AtomicInteger handledByOld = new AtomicInteger();
        final RpcServer old = server("old", handledByOld);
        channel = RpcChannel.builder(uri).transparentRetry(false).build();
        final CompletableFuture<StringValue> started = call("hold");
        Await.until("the held call runs on the old server", TIMEOUT, () -> handledByOld.get() == 1);
        InprocTransportProvider.freezeServer(name, true);
        final CompletableFuture<StringValue> refused = call("x");
        old.shutdown(TIMEOUT);
        InprocTransportProvider.freezeServer(name, false);

        final Throwable t = refused.handle((v, e) -> e).get(TIMEOUT.toSeconds(), TimeUnit.SECONDS);
        assertThat(t).isInstanceOf(RpcException.class);
        final Status status = ((RpcException)t).status();
        assertThat(status.code()).isEqualTo(StatusCode.UNAVAILABLE);
        assertThat(CallFailureCause.attemptFailure(status)).isEqualTo(AttemptFailure.REFUSED);
        assertThat(handledByOld.get()).isEqualTo(1);
        gate.tryEmitEmpty();
        assertThat(started.get(TIMEOUT.toSeconds(), TimeUnit.SECONDS)).isEqualTo(StringValue.of("old"));
    }
}
