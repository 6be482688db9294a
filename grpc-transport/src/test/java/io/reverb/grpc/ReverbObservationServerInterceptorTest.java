package io.reverb.grpc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.protobuf.ByteString;
import io.grpc.ClientInterceptors;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.Server;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.MetadataUtils;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.observation.DefaultMeterObservationHandler;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationHandler;
import io.micrometer.observation.ObservationRegistry;
import io.reverb.grpc.test.EchoGrpc;
import io.reverb.grpc.test.EchoRequest;
import io.reverb.rpc.RpcServer;
import io.reverb.rpc.observation.ObservationServerInterceptor;
import io.reverb.rpc.observation.RpcServerObservationContext;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * {@link ReverbObservationServerInterceptor} on a grpc-java server over Reverb makes the observation rpc-core's
 * {@link ObservationServerInterceptor} makes on a native server: the same timer ({@code rpc.server.duration}) with the
 * same tags, the client's carried entries readable when it starts; and rpc-core's interceptor, set on the Reverb server
 * under grpc-java's as the Spring starter does, observes nothing there (grpc-java's calls are streams grpc-java's
 * server dispatches): each call is counted once.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class ReverbObservationServerInterceptorTest
{
    private static final AtomicInteger IDS = new AtomicInteger();
    private static final String CARRIED = "x-observed";

    private final List<AutoCloseable> closeables = new ArrayList<>();
    private final List<String> addresses = new ArrayList<>();

    @AfterEach
    void closeAndCheckForLeaks() throws Exception
    {
        for (int i = closeables.size() - 1; i >= 0; i--)
        {
            closeables.get(i).close();
        }
        for (final String address : addresses)
        {
            AbstractReverbConformanceTest.assertReleased(address);
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"inproc", "shm", "tcp"})
    void shouldObserveGrpcJavaServerCallsAsRpcCoreObservesNativeOnes(final String scheme) throws Exception
    {
        final SimpleMeterRegistry meters = new SimpleMeterRegistry();
        final ObservationRegistry observations = ObservationRegistry.create();
        final Queue<String> carried = new ConcurrentLinkedQueue<>();
        final Queue<String> peers = new ConcurrentLinkedQueue<>();
        observations.observationConfig()
            .observationHandler(new DefaultMeterObservationHandler(meters))
            .observationHandler(new CarrierReader(carried, peers));

        final String grpcAddress = address(scheme);
        final Server grpcServer = ReverbServerBuilder.forAddress(grpcAddress)
            .reverbServer(b -> b.intercept(new ObservationServerInterceptor(observations)))
            .addService(new GrpcEchoService())
            .intercept(new ReverbObservationServerInterceptor(observations))
            .build().start();
        closeables.add(() ->
        {
            grpcServer.shutdownNow();
            assertThat(grpcServer.awaitTermination(10, TimeUnit.SECONDS)).isTrue();
        });
        final String nativeAddress = address(scheme);
        final RpcServer nativeServer = RpcServer.builder(nativeAddress)
            .intercept(new ObservationServerInterceptor(observations))
            .addService(new NativeInteropTest.NativeEchoService()).build().start();
        closeables.add(nativeServer::close);

        final EchoRequest hello = EchoRequest.newBuilder().setPayload(ByteString.copyFromUtf8("hello")).build();
        final EchoRequest notFound = EchoRequest.newBuilder()
            .setErrorCode(Status.Code.NOT_FOUND.value()).setErrorMessage("no such thing").build();
        for (final String target : List.of(grpcServer.getListenSockets().get(0).toString(), nativeServer.address()))
        {
            final ManagedChannel channel = ReverbChannelBuilder.forTarget(target).build();
            closeables.add(() ->
            {
                channel.shutdownNow();
                assertThat(channel.awaitTermination(10, TimeUnit.SECONDS)).isTrue();
            });
            final Metadata headers = new Metadata();
            headers.put(Metadata.Key.of(CARRIED, Metadata.ASCII_STRING_MARSHALLER), "from-" + target);
            final EchoGrpc.EchoBlockingStub stub = EchoGrpc.newBlockingStub(
                ClientInterceptors.intercept(channel, MetadataUtils.newAttachHeadersInterceptor(headers)));
            assertThat(stub.unary(hello).getPayload()).isEqualTo(hello.getPayload());
            assertThatThrownBy(() -> stub.unary(notFound)).isInstanceOfSatisfying(StatusRuntimeException.class,
                e -> assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.NOT_FOUND));
        }

        // a server's observation stops as its call ends, which may be just after the client has the answer
        final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (meters.find("rpc.server.duration").timers().stream().mapToLong(Timer::count).sum() < 4)
        {
            assertThat(System.nanoTime() - deadline).as("4 observations stopped").isNegative();
            Thread.sleep(2);
        }
        assertThat(meters.find("rpc.server.duration").timers().stream().mapToLong(Timer::count).sum())
            .as("each call observed once").isEqualTo(4);
        assertThat(timer(meters, "0").count()).as("OK: one grpc-java call, one native").isEqualTo(2);
        // the native handler ends its call with grpc-java's StatusRuntimeException: recorded with its code, as the
        // client sees it (rpc-core's interceptor recorded UNKNOWN before)
        final Map<String, Long> notFoundByError = new TreeMap<>();
        meters.find("rpc.server.duration").tag("rpc.reverb.status_code", "5").timers()
            .forEach(t -> notFoundByError.merge(t.getId().getTag("error"), t.count(), Long::sum));
        // the native handler throws grpc-java's StatusRuntimeException: recorded with its code, as the client sees it
        // (rpc-core's interceptor recorded UNKNOWN before); the grpc-java call's error is the bridge's RpcException
        assertThat(notFoundByError).as("NOT_FOUND, by error").isEqualTo(Map.of("RpcException", 1L, "StatusRuntimeException", 1L));
        assertThat(meters.find("rpc.server.duration").tag("rpc.reverb.status_code", "2").timers())
            .as("no call recorded UNKNOWN").isEmpty();
        assertThat(carried).as("each observation read its client's carried entry when it started").hasSize(4)
            .containsOnly("from-" + grpcServer.getListenSockets().get(0), "from-" + nativeServer.address());
        if (scheme.equals("tcp"))
        {
            // the client's address, named alike by both (grpc-java's call has it as an InetSocketAddress)
            assertThat(peers).hasSize(4).allMatch(p -> p.matches("127\\.0\\.0\\.1:\\d+"), "ip:port");
        }
    }

    private String address(final String scheme)
    {
        final String address = scheme.equals("tcp") ? "tcp://127.0.0.1:0" : scheme + "://grpc-reverb-server-observation-" +
            ProcessHandle.current().pid() + "-" + IDS.incrementAndGet();
        addresses.add(address);
        return address;
    }

    private static Timer timer(final SimpleMeterRegistry meters, final String statusCode)
    {
        return meters.find("rpc.server.duration").tag("rpc.system", "reverb").tag("rpc.service", "reverb.grpctest.Echo")
            .tag("rpc.method", "Unary").tag("rpc.reverb.status_code", statusCode).timer();
    }

    /** As a tracer's propagating handler does: reads the carried entry when the server's observation starts. */
    private static final class CarrierReader implements ObservationHandler<RpcServerObservationContext>
    {
        private final Queue<String> carried;
        private final Queue<String> peers;

        CarrierReader(final Queue<String> carried, final Queue<String> peers)
        {
            this.carried = carried;
            this.peers = peers;
        }

        @Override
        public void onStart(final RpcServerObservationContext context)
        {
            peers.add(context.rpcContext().peer());
            final String value = context.getGetter().get(context.getCarrier(), CARRIED);
            if (value != null)
            {
                carried.add(value);
            }
        }

        @Override
        public boolean supportsContext(final Observation.Context context)
        {
            return context instanceof RpcServerObservationContext;
        }
    }
}
