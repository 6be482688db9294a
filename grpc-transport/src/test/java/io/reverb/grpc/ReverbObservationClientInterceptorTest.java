package io.reverb.grpc;

import com.google.protobuf.ByteString;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.Server;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.ServerInterceptors;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.observation.DefaultMeterObservationHandler;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationHandler;
import io.micrometer.observation.ObservationRegistry;
import io.reverb.grpc.test.EchoGrpc;
import io.reverb.grpc.test.EchoRequest;
import io.reverb.grpc.test.EchoRpc;
import io.reverb.rpc.RpcChannel;
import io.reverb.rpc.RpcException;
import io.reverb.rpc.observation.ObservationClientInterceptor;
import io.reverb.rpc.observation.RpcClientObservationContext;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * {@link ReverbObservationClientInterceptor} on a grpc-java channel over Reverb makes the observation rpc-core's
 * {@link ObservationClientInterceptor} makes on a native channel: the same timer ({@code rpc.client.duration}) with
 * the same tags, so a grpc-java call and a native call of one method count in one timer; the entries a handler puts
 * into the carrier on start reach the server in the call's headers; and rpc-core's interceptor, set on the grpc-java
 * channel's Reverb connections as the Spring starter does, observes nothing there (grpc-java's calls are Reverb
 * streams, with no rpc-core call around them): each call is counted once.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class ReverbObservationClientInterceptorTest
{
    private static final AtomicInteger IDS = new AtomicInteger();
    private static final String CARRIED = "x-observed";
    private static final Metadata.Key<String> CARRIED_KEY = Metadata.Key.of(CARRIED, Metadata.ASCII_STRING_MARSHALLER);

    private final List<AutoCloseable> closeables = new ArrayList<>();
    private final Queue<String> carriedSeenByServer = new ConcurrentLinkedQueue<>();
    private String address;

    @AfterEach
    void closeAndCheckForLeaks() throws Exception
    {
        for (int i = closeables.size() - 1; i >= 0; i--)
        {
            closeables.get(i).close();
        }
        AbstractReverbConformanceTest.assertReleased(address);
    }

    @ParameterizedTest
    @ValueSource(strings = {"inproc", "shm"})
    void shouldObserveGrpcJavaCallsAsRpcCoreObservesNativeCalls(final String scheme) throws Exception
    {
        address = scheme + "://grpc-reverb-observation-" + ProcessHandle.current().pid() + "-" + IDS.incrementAndGet();
        final Server server = ReverbServerBuilder.forAddress(address)
            .addService(ServerInterceptors.intercept(new GrpcEchoService(), new CarriedRecorder()))
            .build().start();
        closeables.add(() ->
        {
            server.shutdownNow();
            assertThat(server.awaitTermination(10, TimeUnit.SECONDS)).isTrue();
        });
        final String target = server.getListenSockets().get(0).toString();

        final SimpleMeterRegistry meters = new SimpleMeterRegistry();
        final ObservationRegistry observations = ObservationRegistry.create();
        final AtomicInteger started = new AtomicInteger();
        observations.observationConfig()
            .observationHandler(new DefaultMeterObservationHandler(meters))
            .observationHandler(new CarrierWriter(started));

        // the grpc-java channel as the Spring starter builds it: rpc-core's interceptor on its Reverb connections,
        // grpc-java's on the channel
        final ManagedChannel grpcChannel = ReverbChannelBuilder.forTarget(target)
            .reverbChannel(b -> b.intercept(new ObservationClientInterceptor(observations)))
            .intercept(new ReverbObservationClientInterceptor(observations))
            .build();
        closeables.add(() ->
        {
            grpcChannel.shutdownNow();
            assertThat(grpcChannel.awaitTermination(10, TimeUnit.SECONDS)).isTrue();
        });
        final RpcChannel nativeChannel = RpcChannel.builder(target)
            .intercept(new ObservationClientInterceptor(observations)).build();
        closeables.add(nativeChannel);

        final EchoRequest hello = EchoRequest.newBuilder().setPayload(ByteString.copyFromUtf8("hello")).build();
        final EchoRequest notFound = EchoRequest.newBuilder()
            .setErrorCode(Status.Code.NOT_FOUND.value()).setErrorMessage("no such thing").build();
        final EchoGrpc.EchoBlockingStub grpcStub = EchoGrpc.newBlockingStub(grpcChannel);
        final EchoRpc.EchoReactorStub nativeStub = EchoRpc.newReactorStub(nativeChannel);

        assertThat(grpcStub.unary(hello).getPayload()).isEqualTo(hello.getPayload());
        // read before the native call: the grpc-java call's observation stopped before its caller had the answer
        assertThat(timer(meters, "0")).as("the grpc-java call, counted when its caller has the answer").isNotNull()
            .satisfies(t -> assertThat(t.count()).isEqualTo(1));
        assertThatThrownBy(() -> grpcStub.unary(notFound)).isInstanceOfSatisfying(StatusRuntimeException.class,
            e -> assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.NOT_FOUND));
        assertThat(nativeStub.unary(hello).block(Duration.ofSeconds(30)).getPayload()).isEqualTo(hello.getPayload());
        assertThatThrownBy(() -> nativeStub.unary(notFound).block(Duration.ofSeconds(30)))
            .isInstanceOf(RpcException.class);

        // one timer per outcome, each call counted once, grpc-java's and native calls under the same tags
        // (rpc.system, rpc.service, rpc.method, rpc.reverb.status_code, and the meter handler's error)
        final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (started.get() < 4 || meters.find("rpc.client.duration").timers().stream().mapToLong(Timer::count).sum() < 4)
        {
            // the native call's observation stops just after its caller has the answer
            assertThat(System.nanoTime() - deadline).as("4 observations stopped").isNegative();
            Thread.sleep(2);
        }
        assertThat(started.get()).as("observations started: one per call").isEqualTo(4);
        assertThat(meters.find("rpc.client.duration").timers()).hasSize(2);
        assertThat(timer(meters, "0").count()).as("OK: one grpc-java call, one native").isEqualTo(2);
        assertThat(timer(meters, "5").count()).as("NOT_FOUND: one grpc-java call, one native").isEqualTo(2);
        assertThat(timer(meters, "5").getId().getTag("error")).isEqualTo(RpcException.class.getSimpleName());

        // what a handler (a tracer's propagator) put into the carrier on start went out with the call's headers
        assertThat(carriedSeenByServer).hasSize(4).doesNotHaveDuplicates().allSatisfy(v -> assertThat(v).startsWith("obs-"));
    }

    private static Timer timer(final SimpleMeterRegistry meters, final String statusCode)
    {
        return meters.find("rpc.client.duration").tag("rpc.system", "reverb").tag("rpc.service", "reverb.grpctest.Echo")
            .tag("rpc.method", "Unary").tag("rpc.reverb.status_code", statusCode).timer();
    }

    /** As a tracer's propagating handler does: writes an entry into the call's carrier when the observation starts. */
    private static final class CarrierWriter implements ObservationHandler<RpcClientObservationContext>
    {
        private final AtomicInteger started;

        CarrierWriter(final AtomicInteger started)
        {
            this.started = started;
        }

        @Override
        public void onStart(final RpcClientObservationContext context)
        {
            context.getSetter().set(context.getCarrier(), CARRIED, "obs-" + started.incrementAndGet());
        }

        @Override
        public boolean supportsContext(final Observation.Context context)
        {
            return context instanceof RpcClientObservationContext;
        }
    }

    /** Records the carried entry each call brought to the server. */
    private final class CarriedRecorder implements ServerInterceptor
    {
        @Override
        public <Q, R> ServerCall.Listener<Q> interceptCall(
            final ServerCall<Q, R> call, final Metadata headers, final ServerCallHandler<Q, R> next)
        {
            final String value = headers.get(CARRIED_KEY);
            if (value != null)
            {
                carriedSeenByServer.add(value);
            }
            return next.startCall(call, headers);
        }
    }
}
