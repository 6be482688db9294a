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
import io.micrometer.core.instrument.binder.grpc.GrpcClientObservationContext;
import io.micrometer.core.instrument.binder.grpc.GrpcServerObservationContext;
import io.micrometer.core.instrument.binder.grpc.ObservationGrpcClientInterceptor;
import io.micrometer.core.instrument.binder.grpc.ObservationGrpcServerInterceptor;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationHandler;
import io.micrometer.observation.tck.TestObservationRegistry;
import io.micrometer.observation.tck.TestObservationRegistryAssert;
import io.micrometer.tracing.handler.DefaultTracingObservationHandler;
import io.micrometer.tracing.handler.PropagatingReceiverTracingObservationHandler;
import io.micrometer.tracing.handler.PropagatingSenderTracingObservationHandler;
import io.micrometer.tracing.otel.bridge.OtelCurrentTraceContext;
import io.micrometer.tracing.otel.bridge.OtelPropagator;
import io.micrometer.tracing.otel.bridge.OtelTracer;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.Tracer;
import io.opentelemetry.api.trace.propagation.W3CTraceContextPropagator;
import io.opentelemetry.context.propagation.ContextPropagators;
import io.opentelemetry.sdk.common.CompletableResultCode;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.SimpleSpanProcessor;
import io.opentelemetry.sdk.trace.export.SpanExporter;
import io.opentelemetry.sdk.trace.samplers.Sampler;
import io.reverb.grpc.test.EchoGrpc;
import io.reverb.grpc.test.EchoReply;
import io.reverb.grpc.test.EchoRequest;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.ArrayList;
import java.util.Collection;
import java.util.Iterator;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.fail;

/**
 * Micrometer's own grpc-java Observation interceptors ({@code io.micrometer.core.instrument.binder.grpc}) on a
 * channel built by {@link ReverbChannelBuilder} and a server built by {@link ReverbServerBuilder}, unchanged: one
 * Observation per call on each side with the OpenTelemetry RPC keys, and the W3C trace context carried in the call's
 * metadata so that the server's span is the child of the client's.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class GrpcObservationTest
{
    private static final AtomicInteger IDS = new AtomicInteger();
    private static final Metadata.Key<String> TRACEPARENT = Metadata.Key.of("traceparent", Metadata.ASCII_STRING_MARSHALLER);

    private final Queue<SpanData> spans = new ConcurrentLinkedQueue<>();
    private final Queue<String> traceparentsSeenByServer = new ConcurrentLinkedQueue<>();

    @ParameterizedTest
    @ValueSource(strings = {"inproc", "shm", "tcp"})
    void shouldObserveEachCallOnBothSidesAndLinkTheServerSpanToTheClientSpan(final String scheme) throws Exception
    {
        final TestObservationRegistry clientObservations = tracingRegistry("client");
        final TestObservationRegistry serverObservations = tracingRegistry("server");
        final Lifecycle clientLifecycle = new Lifecycle();
        final Lifecycle serverLifecycle = new Lifecycle();
        clientObservations.observationConfig().observationHandler(clientLifecycle);
        serverObservations.observationConfig().observationHandler(serverLifecycle);
        final String address = address(scheme);
        final Server server = ReverbServerBuilder.forAddress(address)
            .addService(ServerInterceptors.intercept(new GrpcEchoService(), new TraceparentRecorder()))
            .intercept(new ObservationGrpcServerInterceptor(serverObservations))
            .build()
            .start();
        final ManagedChannel channel = ReverbChannelBuilder.forTarget(server.getListenSockets().get(0).toString())
            .intercept(new ObservationGrpcClientInterceptor(clientObservations))
            .build();
        try
        {
            final EchoGrpc.EchoBlockingStub stub = EchoGrpc.newBlockingStub(channel);
            final EchoRequest hello = EchoRequest.newBuilder().setPayload(ByteString.copyFromUtf8("hello")).build();
            assertThat(stub.unary(hello).getPayload()).isEqualTo(hello.getPayload());

            assertThatThrownBy(() -> stub.unary(EchoRequest.newBuilder()
                    .setErrorCode(Status.Code.NOT_FOUND.value()).setErrorMessage("no such thing").build()))
                .isInstanceOfSatisfying(StatusRuntimeException.class,
                    e -> assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.NOT_FOUND));

            final Iterator<EchoReply> replies = stub.serverStream(EchoRequest.newBuilder().setCount(3).setSize(8).build());
            int received = 0;
            while (replies.hasNext())
            {
                replies.next();
                received++;
            }
            assertThat(received).isEqualTo(3);

            // the server's observation stops once the status is sent, maybe after the client saw it: count, then assert
            await("3 server observations stopped", () -> serverLifecycle.stops.get() == 3);
            await("6 spans exported", () -> spans.size() == 6);
        }
        finally
        {
            channel.shutdownNow();
            server.shutdownNow();
            assertThat(channel.awaitTermination(10, TimeUnit.SECONDS)).isTrue();
            assertThat(server.awaitTermination(10, TimeUnit.SECONDS)).isTrue();
        }
        AbstractReverbConformanceTest.assertReleased(address);

        // one Observation per call and side, started and stopped, with the low-cardinality RPC keys
        assertThat(clientLifecycle.starts.get()).isEqualTo(3);
        assertThat(clientLifecycle.stops.get()).isEqualTo(3);
        assertThat(serverLifecycle.starts.get()).isEqualTo(3);
        TestObservationRegistryAssert.assertThat(clientObservations)
            .hasNumberOfObservationsWithNameEqualTo("grpc.client", 3)
            .forAllObservationsWithNameEqualTo("grpc.client", o -> o
                .hasLowCardinalityKeyValue("rpc.service", "reverb.grpctest.Echo"))
            .hasAnObservation(o -> o.hasNameEqualTo("grpc.client")
                .hasLowCardinalityKeyValue("rpc.method", "Unary")
                .hasLowCardinalityKeyValue("rpc.type", "UNARY")
                .hasLowCardinalityKeyValue("grpc.status_code", "OK"))
            .hasAnObservation(o -> o.hasNameEqualTo("grpc.client")
                .hasLowCardinalityKeyValue("rpc.method", "Unary")
                .hasLowCardinalityKeyValue("grpc.status_code", "NOT_FOUND"))
            .hasAnObservation(o -> o.hasNameEqualTo("grpc.client")
                .hasLowCardinalityKeyValue("rpc.method", "ServerStream")
                .hasLowCardinalityKeyValue("rpc.type", "SERVER_STREAMING")
                .hasLowCardinalityKeyValue("grpc.status_code", "OK"));
        TestObservationRegistryAssert.assertThat(serverObservations)
            .hasNumberOfObservationsWithNameEqualTo("grpc.server", 3)
            .forAllObservationsWithNameEqualTo("grpc.server", o -> o
                .hasLowCardinalityKeyValue("rpc.service", "reverb.grpctest.Echo"))
            .hasAnObservation(o -> o.hasNameEqualTo("grpc.server")
                .hasLowCardinalityKeyValue("rpc.method", "Unary")
                .hasLowCardinalityKeyValue("grpc.status_code", "NOT_FOUND"))
            .hasAnObservation(o -> o.hasNameEqualTo("grpc.server")
                .hasLowCardinalityKeyValue("rpc.method", "ServerStream")
                .hasLowCardinalityKeyValue("grpc.status_code", "OK"));
        assertThat(contexts(clientObservations)).allSatisfy(c -> assertThat(c).isInstanceOf(GrpcClientObservationContext.class));
        assertThat(contexts(serverObservations)).allSatisfy(c -> assertThat(c).isInstanceOf(GrpcServerObservationContext.class));

        // the trace context crossed the transport in the call's metadata: each server span is a client span's child
        final List<SpanData> clientSpans = new ArrayList<>();
        final List<SpanData> serverSpans = new ArrayList<>();
        for (final SpanData span : spans)
        {
            (span.getKind() == SpanKind.CLIENT ? clientSpans : serverSpans).add(span);
        }
        assertThat(clientSpans).hasSize(3);
        assertThat(serverSpans).hasSize(3).allSatisfy(s -> assertThat(s.getKind()).isEqualTo(SpanKind.SERVER));
        for (final SpanData child : serverSpans)
        {
            assertThat(clientSpans).as("parent of %s", child.getName()).anySatisfy(parent ->
            {
                assertThat(child.getTraceId()).isEqualTo(parent.getTraceId());
                assertThat(child.getParentSpanId()).isEqualTo(parent.getSpanId());
                assertThat(child.getName()).isEqualTo(parent.getName());
            });
        }
        assertThat(clientSpans.stream().map(SpanData::getTraceId).distinct()).as("one trace per call").hasSize(3);
        assertThat(traceparentsSeenByServer).hasSize(3)
            .allSatisfy(t -> assertThat(t).matches("00-[0-9a-f]{32}-[0-9a-f]{16}-0[0-9a-f]"));
    }

    // ---------------------------------------------------------------------------------------------------- helpers

    private static String address(final String scheme)
    {
        switch (scheme)
        {
            case "tcp":
                return "tcp://127.0.0.1:0";
            default:
                return scheme + "://grpc-observation-" + ProcessHandle.current().pid() + "-" + IDS.incrementAndGet();
        }
    }

    /**
     * A TestObservationRegistry (which also checks each Observation's lifecycle) with Micrometer Tracing's handlers
     * over an OpenTelemetry SDK tracer and the W3C propagator, as an application with
     * {@code micrometer-tracing-bridge-otel} would configure it.
     */
    private TestObservationRegistry tracingRegistry(final String side)
    {
        final SdkTracerProvider provider = SdkTracerProvider.builder().setSampler(Sampler.alwaysOn())
            .addSpanProcessor(SimpleSpanProcessor.create(new Collector(spans))).build();
        final Tracer otel = provider.get("reverb-grpc-test-" + side);
        final OtelTracer tracer = new OtelTracer(otel, new OtelCurrentTraceContext(), event -> { });
        final OtelPropagator propagator =
            new OtelPropagator(ContextPropagators.create(W3CTraceContextPropagator.getInstance()), otel);
        final TestObservationRegistry registry = TestObservationRegistry.create();
        registry.observationConfig().observationHandler(new ObservationHandler.FirstMatchingCompositeObservationHandler(
                new PropagatingSenderTracingObservationHandler<>(tracer, propagator),
                new PropagatingReceiverTracingObservationHandler<>(tracer, propagator),
                new DefaultTracingObservationHandler(tracer)));
        return registry;
    }

    private static List<Observation.Context> contexts(final TestObservationRegistry registry)
    {
        final List<Observation.Context> contexts = new ArrayList<>();
        TestObservationRegistryAssert.assertThat(registry).hasHandledContextsThatSatisfy(contexts::addAll);
        return contexts;
    }

    private static void await(final String what, final BooleanSupplier condition) throws InterruptedException
    {
        final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (!condition.getAsBoolean())
        {
            if (System.nanoTime() - deadline > 0)
            {
                fail("timed out waiting for: " + what);
            }
            Thread.sleep(2);
        }
    }

    /** Records the W3C trace context each call brought to the server (in its headers, as grpc-java sees them). */
    private final class TraceparentRecorder implements ServerInterceptor
    {
        @Override
        public <Q, R> ServerCall.Listener<Q> interceptCall(
            final ServerCall<Q, R> call, final Metadata headers, final ServerCallHandler<Q, R> next)
        {
            final String traceparent = headers.get(TRACEPARENT);
            if (traceparent != null)
            {
                traceparentsSeenByServer.add(traceparent);
            }
            return next.startCall(call, headers);
        }
    }

    /** Counts the Observations started and stopped on one side. */
    private static final class Lifecycle implements ObservationHandler<Observation.Context>
    {
        final AtomicInteger starts = new AtomicInteger();
        final AtomicInteger stops = new AtomicInteger();

        @Override
        public void onStart(final Observation.Context context)
        {
            starts.incrementAndGet();
        }

        @Override
        public void onStop(final Observation.Context context)
        {
            stops.incrementAndGet();
        }

        @Override
        public boolean supportsContext(final Observation.Context context)
        {
            return true;
        }
    }

    /** Keeps every ended span. */
    private static final class Collector implements SpanExporter
    {
        private final Queue<SpanData> into;

        Collector(final Queue<SpanData> into)
        {
            this.into = into;
        }

        @Override
        public CompletableResultCode export(final Collection<SpanData> batch)
        {
            into.addAll(batch);
            return CompletableResultCode.ofSuccess();
        }

        @Override
        public CompletableResultCode flush()
        {
            return CompletableResultCode.ofSuccess();
        }

        @Override
        public CompletableResultCode shutdown()
        {
            return CompletableResultCode.ofSuccess();
        }
    }
}
