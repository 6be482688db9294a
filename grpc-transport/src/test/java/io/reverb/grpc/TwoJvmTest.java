package io.reverb.grpc;

import com.google.protobuf.ByteString;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.ClientCallStreamObserver;
import io.grpc.stub.ClientResponseObserver;
import io.grpc.stub.MetadataUtils;
import io.grpc.stub.StreamObserver;
import io.reverb.grpc.test.EchoGrpc;
import io.reverb.grpc.test.EchoReply;
import io.reverb.grpc.test.EchoRequest;
import io.reverb.grpc.test.EchoRpc;
import io.reverb.grpc.test.ReactorEchoGrpc;
import io.reverb.rpc.RpcChannel;
import io.reverb.rpc.RpcException;
import io.reverb.rpc.StatusCode;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * grpc-java over Reverb between two JVMs, over {@code shm://} and {@code tcp://}: the server is an unchanged grpc-java
 * service in a child process ({@link GrpcServerMain}); this JVM calls it with grpc-java's stubs (four call shapes,
 * 0 B-8 MiB messages, deadlines, cancellation, metadata in headers and trailers, status with binary trailers),
 * reactive-grpc's Reactor stubs and Reverb's native stubs.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class TwoJvmTest
{
    private static final Duration WAIT = Duration.ofSeconds(30);

    private Process child;
    private String requested;

    @AfterEach
    void stopServerProcess() throws Exception
    {
        if (child == null)
        {
            return;
        }
        try
        {
            child.getOutputStream().close();
            assertThat(child.waitFor(60, TimeUnit.SECONDS)).as("server process exited").isTrue();
            assertThat(child.exitValue()).as("server process exit code (0: graceful shutdown done)").isZero();
        }
        finally
        {
            child.destroyForcibly();
        }
        AbstractReverbConformanceTest.assertReleased(requested);
    }

    @ParameterizedTest
    @ValueSource(strings = {"shm", "tcp"})
    void grpcReactorAndNativeStubsShouldCallGrpcServiceInAnotherJvm(final String scheme) throws Exception
    {
        requested = "shm".equals(scheme) ? "shm://grpc-2jvm-" + ProcessHandle.current().pid() : "tcp://127.0.0.1:0";
        final String address = startServerProcess(requested);
        final ManagedChannel channel = ReverbChannelBuilder.forTarget(address)
            .maxInboundMessageSize(AbstractGrpcConformanceTest.MAX_MESSAGE).build();
        try (RpcChannel nativeChannel = RpcChannel.builder(address).build())
        {
            callShapes(channel);
            deadlinesAndCancellation(channel);
            metadataAndErrors(channel);
            reactorGrpcStubs(channel);
            nativeStubs(nativeChannel);
        }
        finally
        {
            channel.shutdownNow();
            assertThat(channel.awaitTermination(10, TimeUnit.SECONDS)).isTrue();
        }
    }

    private static void callShapes(final ManagedChannel channel) throws Exception
    {
        final EchoGrpc.EchoBlockingStub stub = EchoGrpc.newBlockingStub(channel);
        for (final int size : new int[] {0, 64, 4097, 1 << 20, 8 << 20})
        {
            final ByteString payload = ByteString.copyFrom(new byte[size]);
            assertThat(stub.unary(EchoRequest.newBuilder().setPayload(payload).build()).getPayload().size())
                .isEqualTo(size);
        }
        final List<EchoReply> replies = new ArrayList<>();
        stub.serverStream(EchoRequest.newBuilder().setCount(200).setSize(100).build()).forEachRemaining(replies::add);
        assertThat(replies).hasSize(200);
        assertThat(replies.get(199).getIndex()).isEqualTo(199);

        final CompletableFuture<EchoReply> sum = new CompletableFuture<>();
        final StreamObserver<EchoRequest> requests = EchoGrpc.newStub(channel).clientStream(observer(sum, null));
        for (int i = 0; i < 50; i++)
        {
            requests.onNext(EchoRequest.newBuilder().setPayload(ByteString.copyFrom(new byte[i])).build());
        }
        requests.onCompleted();
        final EchoReply total = sum.get(30, TimeUnit.SECONDS);
        assertThat(total.getMessageCount()).isEqualTo(50);
        assertThat(total.getTotalBytes()).isEqualTo(50 * 49 / 2);

        final List<EchoReply> echoed = new ArrayList<>();
        final CompletableFuture<EchoReply> bidiDone = new CompletableFuture<>();
        final StreamObserver<EchoRequest> bidi = EchoGrpc.newStub(channel).bidi(observer(bidiDone, echoed));
        for (int i = 0; i < 20; i++)
        {
            bidi.onNext(EchoRequest.newBuilder().setPayload(ByteString.copyFromUtf8("m" + i)).build());
        }
        bidi.onCompleted();
        bidiDone.get(30, TimeUnit.SECONDS);
        assertThat(echoed).hasSize(20);
        assertThat(echoed.get(19).getPayload().toStringUtf8()).isEqualTo("m19");
    }

    private static void deadlinesAndCancellation(final ManagedChannel channel) throws Exception
    {
        // the server waits a minute unless its Context is cancelled: the deadline (carried in the CALL) ends it
        assertThatThrownBy(() -> EchoGrpc.newBlockingStub(channel).withDeadlineAfter(200, TimeUnit.MILLISECONDS)
                .unary(EchoRequest.newBuilder().setDelayMillis(60_000).build()))
            .isInstanceOfSatisfying(StatusRuntimeException.class,
                e -> assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.DEADLINE_EXCEEDED));
        // the server sees what is left of the deadline
        final EchoReply withDeadline = EchoGrpc.newBlockingStub(channel).withDeadlineAfter(60, TimeUnit.SECONDS)
            .unary(EchoRequest.getDefaultInstance());
        assertThat(withDeadline.getTotalBytes()).isBetween(1L, 60_000L);

        // a client cancels an endless stream after 5 replies
        final AtomicInteger received = new AtomicInteger();
        final CompletableFuture<Status> ended = new CompletableFuture<>();
        EchoGrpc.newStub(channel).serverStream(EchoRequest.newBuilder().setCount(Integer.MAX_VALUE).setSize(10).build(),
            new ClientResponseObserver<EchoRequest, EchoReply>()
            {
                private ClientCallStreamObserver<EchoRequest> call;

                @Override
                public void beforeStart(final ClientCallStreamObserver<EchoRequest> requestStream)
                {
                    call = requestStream;
                }

                @Override
                public void onNext(final EchoReply value)
                {
                    if (received.incrementAndGet() == 5)
                    {
                        call.cancel("enough", null);
                    }
                }

                @Override
                public void onError(final Throwable t)
                {
                    ended.complete(Status.fromThrowable(t));
                }

                @Override
                public void onCompleted()
                {
                    ended.complete(Status.OK);
                }
            });
        final Status cancelled = ended.get(30, TimeUnit.SECONDS);
        assertThat(cancelled.getCode()).isEqualTo(Status.Code.CANCELLED);
        assertThat(cancelled.getDescription()).isEqualTo("enough");
        assertThat(received.get()).isGreaterThanOrEqualTo(5);
        // and the channel carries on
        assertThat(EchoGrpc.newBlockingStub(channel).unary(EchoRequest.getDefaultInstance())).isNotNull();
    }

    private static void metadataAndErrors(final ManagedChannel channel)
    {
        final Metadata sent = new Metadata();
        sent.put(AbstractGrpcConformanceTest.ASCII_KEY, "across");
        sent.put(AbstractGrpcConformanceTest.BINARY_KEY, new byte[] {0, (byte)0xFF, 7});
        final AtomicReference<Metadata> headers = new AtomicReference<>();
        final AtomicReference<Metadata> trailers = new AtomicReference<>();
        final EchoGrpc.EchoBlockingStub stub = EchoGrpc.newBlockingStub(channel).withInterceptors(
            MetadataUtils.newAttachHeadersInterceptor(sent), MetadataUtils.newCaptureMetadataInterceptor(headers, trailers));
        stub.unary(EchoRequest.getDefaultInstance());
        assertThat(headers.get().get(AbstractGrpcConformanceTest.ECHOED_ASCII)).isEqualTo("across");
        assertThat(trailers.get().get(AbstractGrpcConformanceTest.TRAILER_ASCII)).isEqualTo("trailer of across");
        assertThat(trailers.get().get(AbstractGrpcConformanceTest.ECHOED_BINARY)).containsExactly(0, 0xFF, 7);

        assertThatThrownBy(() -> EchoGrpc.newBlockingStub(channel).unary(EchoRequest.newBuilder()
                .setErrorCode(Status.Code.ABORTED.value()).setErrorMessage("across processes").build()))
            .isInstanceOfSatisfying(StatusRuntimeException.class, e ->
            {
                assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.ABORTED);
                assertThat(e.getStatus().getDescription()).isEqualTo("across processes");
                assertThat(e.getTrailers().get(GrpcEchoService.ERROR_BIN)).isEqualTo(GrpcEchoService.ERROR_BYTES);
                assertThat(e.getTrailers().get(GrpcEchoService.ERROR_ASCII)).isNotNull();
            });
    }

    private static void reactorGrpcStubs(final ManagedChannel channel)
    {
        final ReactorEchoGrpc.ReactorEchoStub stub = ReactorEchoGrpc.newReactorStub(channel);
        assertThat(stub.unary(EchoRequest.newBuilder().setPayload(ByteString.copyFromUtf8("reactive")).build())
            .block(WAIT).getPayload().toStringUtf8()).isEqualTo("reactive");
        assertThat(stub.serverStream(EchoRequest.newBuilder().setCount(300).setSize(10).build())
            .count().block(WAIT)).isEqualTo(300);
        assertThat(stub.clientStream(Flux.range(0, 40).map(i -> EchoRequest.newBuilder()
                .setPayload(ByteString.copyFrom(new byte[i])).build()))
            .block(WAIT).getMessageCount()).isEqualTo(40);
        assertThat(stub.bidi(Flux.range(0, 30).map(i -> EchoRequest.newBuilder()
                .setPayload(ByteString.copyFromUtf8("r" + i)).build()))
            .map(r -> r.getPayload().toStringUtf8()).collectList().block(WAIT))
            .hasSize(30).endsWith("r29");
        // backpressure through reactive-grpc: take(7) of an endless stream cancels it
        assertThat(stub.serverStream(EchoRequest.newBuilder().setCount(Integer.MAX_VALUE).setSize(10).build())
            .take(7).count().block(WAIT)).isEqualTo(7);
        assertThatThrownBy(() -> stub.unary(Mono.just(EchoRequest.newBuilder()
                .setErrorCode(Status.Code.NOT_FOUND.value()).setErrorMessage("nothing").build())).block(WAIT))
            .isInstanceOfSatisfying(StatusRuntimeException.class,
                e -> assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.NOT_FOUND));
    }

    private static void nativeStubs(final RpcChannel nativeChannel)
    {
        final EchoRpc.EchoReactorStub reverb = EchoRpc.newReactorStub(nativeChannel);
        assertThat(reverb.unary(EchoRequest.newBuilder().setPayload(ByteString.copyFromUtf8("native")).build())
            .block(WAIT).getPayload().toStringUtf8()).isEqualTo("native");
        assertThat(reverb.serverStream(EchoRequest.newBuilder().setCount(100).setSize(10).build())
            .count().block(WAIT)).isEqualTo(100);
        assertThatThrownBy(() -> reverb.unary(EchoRequest.newBuilder()
                .setErrorCode(Status.Code.ABORTED.value()).setErrorMessage("native sees it").build()).block(WAIT))
            .isInstanceOfSatisfying(RpcException.class, e ->
            {
                assertThat(e.status().code()).isEqualTo(StatusCode.ABORTED);
                assertThat(e.status().description()).isEqualTo("native sees it");
            });
    }

    private String startServerProcess(final String serve) throws Exception
    {
        child = new ProcessBuilder(
            Paths.get(System.getProperty("java.home"), "bin", "java").toString(),
            "--add-exports", "java.base/jdk.internal.misc=ALL-UNNAMED",
            "-Xmx512m",
            "-cp", System.getProperty("java.class.path"),
            GrpcServerMain.class.getName(), serve)
            .redirectError(ProcessBuilder.Redirect.INHERIT)
            .start();
        final BufferedReader out = new BufferedReader(new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8));
        final String line = out.readLine();
        assertThat(line).as("server process ready").startsWith("READY ");
        return line.substring("READY ".length());
    }

    private static StreamObserver<EchoReply> observer(final CompletableFuture<EchoReply> last, final List<EchoReply> all)
    {
        return new StreamObserver<>()
        {
            private EchoReply latest;

            @Override
            public void onNext(final EchoReply value)
            {
                latest = value;
                if (all != null)
                {
                    all.add(value);
                }
            }

            @Override
            public void onError(final Throwable t)
            {
                last.completeExceptionally(t);
            }

            @Override
            public void onCompleted()
            {
                last.complete(latest);
            }
        };
    }
}
