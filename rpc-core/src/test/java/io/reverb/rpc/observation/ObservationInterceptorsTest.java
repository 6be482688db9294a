package io.reverb.rpc.observation;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.Int32Value;
import com.google.protobuf.StringValue;
import io.micrometer.common.KeyValue;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.observation.DefaultMeterObservationHandler;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationHandler;
import io.micrometer.observation.ObservationRegistry;
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
import io.reverb.rpc.CallOptions;
import io.reverb.rpc.Metadata;
import io.reverb.rpc.RpcChannel;
import io.reverb.rpc.RpcContext;
import io.reverb.rpc.RpcException;
import io.reverb.rpc.RpcServer;
import io.reverb.rpc.ServerCallHandler;
import io.reverb.rpc.ServerInterceptor;
import io.reverb.rpc.TestService;
import io.reverb.rpc.stub.ClientCalls;
import io.reverb.rpc.testing.Await;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.reactivestreams.Publisher;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.test.StepVerifier;

class ObservationInterceptorsTest
{
    private static final Duration TIMEOUT = Duration.ofSeconds(20);
    private static final AtomicLong NAMES = new AtomicLong();
    private static final Metadata.Key<String> TRACEPARENT = Metadata.Key.of("traceparent", Metadata.ASCII_STRING_MARSHALLER);

    @Test
    void shouldRecordOneObservationPerCallOnEachSideWithRpcKeys() throws Exception
    {
        final Recorder clientSide = new Recorder();
        final Recorder serverSide = new Recorder();
        final String uri = uri();
        try (RpcServer server = RpcServer.builder(uri).addService(new TestService())
                .intercept(new ObservationServerInterceptor(registry(serverSide))).build().start();
            RpcChannel channel = RpcChannel.builder(uri)
                .intercept(new ObservationClientInterceptor(registry(clientSide))).build())
        {
            StepVerifier.create(ClientCalls.unary(channel, TestService.ECHO, CallOptions.DEFAULT, StringValue.of("a")))
                .expectNext(StringValue.of("a")).expectComplete().verify(TIMEOUT);
            StepVerifier.create(ClientCalls.unary(channel, TestService.ECHO, CallOptions.DEFAULT,
                StringValue.of("status:NOT_FOUND:no")))
                .expectError(RpcException.class).verify(TIMEOUT);
            Await.until("two server observations stopped", TIMEOUT, () -> serverSide.stopped.size() == 2);

            assertThat(clientSide.started.get()).isEqualTo(2);
            assertThat(clientSide.stopped).hasSize(2);
            final List<Observation.Context> client = new ArrayList<>(clientSide.stopped);
            assertThat(client).extracting(Observation.Context::getName).containsOnly("rpc.client.duration");
            assertThat(client).extracting(Observation.Context::getContextualName).containsOnly("reverb.test.TestService/Echo");
            assertThat(lowCardinality(client.get(0))).isEqualTo(Map.of("rpc.system", "reverb",
                "rpc.service", "reverb.test.TestService", "rpc.method", "Echo", "rpc.reverb.status_code", "0"));
            assertThat(lowCardinality(client.get(1))).containsEntry("rpc.reverb.status_code", "5");
            assertThat(client.get(0).getError()).isNull();
            assertThat(client.get(1).getError()).isInstanceOf(RpcException.class);

            final List<Observation.Context> serverContexts = new ArrayList<>(serverSide.stopped);
            assertThat(serverSide.started.get()).isEqualTo(2);
            assertThat(serverContexts).extracting(Observation.Context::getName).containsOnly("rpc.server.duration");
            assertThat(serverContexts).extracting(Observation.Context::getContextualName)
                .containsOnly("reverb.test.TestService/Echo");
            assertThat(lowCardinality(serverContexts.get(0))).isEqualTo(Map.of("rpc.system", "reverb",
                "rpc.service", "reverb.test.TestService", "rpc.method", "Echo", "rpc.reverb.status_code", "0"));
            assertThat(lowCardinality(serverContexts.get(1))).containsEntry("rpc.reverb.status_code", "5");
        }
    }

    @Test
    void shouldRecordACancelledStreamAsCancelledOnBothSides() throws Exception
    {
        final Recorder clientSide = new Recorder();
        final Recorder serverSide = new Recorder();
        final TestService service = new TestService();
        final String uri = uri();
        try (RpcServer server = RpcServer.builder(uri).addService(service)
                .intercept(new ObservationServerInterceptor(registry(serverSide))).build().start();
            RpcChannel channel = RpcChannel.builder(uri)
                .intercept(new ObservationClientInterceptor(registry(clientSide))).build())
        {
            final Disposable call = ClientCalls.serverStreaming(channel, TestService.NEVER, CallOptions.DEFAULT,
                Int32Value.of(1)).subscribe();
            Await.until("server observation started", TIMEOUT, () -> serverSide.started.get() == 1);
            call.dispose();
            Await.until("both observations stopped", TIMEOUT,
                () -> clientSide.stopped.size() == 1 && serverSide.stopped.size() == 1);
            assertThat(lowCardinality(clientSide.stopped.peek())).containsEntry("rpc.reverb.status_code", "1")
                .containsEntry("rpc.method", "Never");
            assertThat(lowCardinality(serverSide.stopped.peek())).containsEntry("rpc.reverb.status_code", "1");
        }
    }

    @Test
    void shouldRecordTimersNamedAfterTheRpcConventions() throws Exception
    {
        final SimpleMeterRegistry meters = new SimpleMeterRegistry();
        final ObservationRegistry observations = ObservationRegistry.create();
        observations.observationConfig().observationHandler(new DefaultMeterObservationHandler(meters));
        final String uri = uri();
        try (RpcServer server = RpcServer.builder(uri).addService(new TestService())
                .intercept(new ObservationServerInterceptor(observations)).build().start();
            RpcChannel channel = RpcChannel.builder(uri).intercept(new ObservationClientInterceptor(observations)).build())
        {
            for (int i = 0; i < 3; i++)
            {
                StepVerifier.create(ClientCalls.unary(channel, TestService.ECHO, CallOptions.DEFAULT, StringValue.of("x")))
                    .expectNextCount(1).expectComplete().verify(TIMEOUT);
            }
            Await.until("three server timings", TIMEOUT, () -> count(meters, "rpc.server.duration") == 3);
            // the client's observation stops in doFinally, after the response reached the subscriber (StepVerifier):
            // on inproc the same thread may still be recording the last one
            Await.until("three client timings", TIMEOUT, () -> count(meters, "rpc.client.duration") == 3);
            final Timer client = meters.get("rpc.client.duration").tag("rpc.system", "reverb")
                .tag("rpc.service", "reverb.test.TestService").tag("rpc.method", "Echo")
                .tag("rpc.reverb.status_code", "0").timer();
            assertThat(client.count()).isEqualTo(3);
        }
    }

    @Test
    void shouldCarryTheTraceContextInMetadataSoThatTheServerSpanIsAChildOfTheClientSpan() throws Exception
    {
        final Spans spans = new Spans();
        // Two registries and two tracers, as in two processes: only the call's metadata links them.
        final ObservationRegistry clientObservations = tracingRegistry(spans);
        final ObservationRegistry serverObservations = tracingRegistry(spans);
        final Queue<String> traceparents = new ConcurrentLinkedQueue<>();
        final String uri = uri();
        try (RpcServer server = RpcServer.builder(uri).addService(new TestService())
                .intercept(new ObservationServerInterceptor(serverObservations))
                .intercept(recordingTraceparents(traceparents))
                .build().start();
            RpcChannel channel = RpcChannel.builder(uri).intercept(new ObservationClientInterceptor(clientObservations)).build())
        {
            StepVerifier.create(ClientCalls.unary(channel, TestService.ECHO, CallOptions.DEFAULT, StringValue.of("t")))
                .expectNextCount(1).expectComplete().verify(TIMEOUT);
            Await.until("two spans ended", TIMEOUT, () -> spans.ended.size() == 2);
        }
        final SpanData client = spans.ofKind(SpanKind.CLIENT);
        final SpanData serverSpan = spans.ofKind(SpanKind.SERVER);
        assertThat(client.getName()).isEqualTo("reverb.test.TestService/Echo");
        assertThat(serverSpan.getName()).isEqualTo("reverb.test.TestService/Echo");
        assertThat(serverSpan.getTraceId()).isEqualTo(client.getTraceId());
        assertThat(serverSpan.getParentSpanId()).isEqualTo(client.getSpanId());
        // W3C traceparent: version-traceid-parentid-flags (01 sampled; newer SDKs also set 02, random trace id).
        assertThat(traceparents).hasSize(1);
        assertThat(traceparents.peek()).matches("00-" + client.getTraceId() + "-" + client.getSpanId() + "-0[13]");
        assertThat(client.getAttributes().asMap().toString()).contains("rpc.method=Echo", "rpc.system=reverb");
    }

    @Test
    void shouldLeaveCallsAloneWithTheNoopRegistry() throws Exception
    {
        final Queue<String> traceparents = new ConcurrentLinkedQueue<>();
        final String uri = uri();
        try (RpcServer server = RpcServer.builder(uri).addService(new TestService())
                .intercept(new ObservationServerInterceptor(ObservationRegistry.NOOP))
                .intercept(recordingTraceparents(traceparents))
                .build().start();
            RpcChannel channel = RpcChannel.builder(uri)
                .intercept(new ObservationClientInterceptor(ObservationRegistry.NOOP)).build())
        {
            StepVerifier.create(ClientCalls.unary(channel, TestService.ECHO, CallOptions.DEFAULT, StringValue.of("n")))
                .expectNext(StringValue.of("n")).expectComplete().verify(TIMEOUT);
        }
        assertThat(traceparents).containsExactly("null");
    }

    // ------------------------------------------------------------------ support

    private static String uri()
    {
        return "inproc://observation-" + NAMES.incrementAndGet();
    }

    private static ObservationRegistry registry(final ObservationHandler<Observation.Context> handler)
    {
        final ObservationRegistry registry = ObservationRegistry.create();
        registry.observationConfig().observationHandler(handler);
        return registry;
    }

    private static ObservationRegistry tracingRegistry(final Spans spans)
    {
        final SdkTracerProvider provider = SdkTracerProvider.builder().setSampler(Sampler.alwaysOn())
            .addSpanProcessor(SimpleSpanProcessor.create(spans)).build();
        final Tracer otelTracer = provider.get("reverb-test");
        final OtelTracer tracer = new OtelTracer(otelTracer, new OtelCurrentTraceContext(), event -> { });
        final OtelPropagator propagator = new OtelPropagator(
            ContextPropagators.create(W3CTraceContextPropagator.getInstance()), otelTracer);
        final ObservationRegistry registry = ObservationRegistry.create();
        registry.observationConfig().observationHandler(new ObservationHandler.FirstMatchingCompositeObservationHandler(
            new PropagatingSenderTracingObservationHandler<>(tracer, propagator),
            new PropagatingReceiverTracingObservationHandler<>(tracer, propagator),
            new DefaultTracingObservationHandler(tracer)));
        return registry;
    }

    private static Map<String, String> lowCardinality(final Observation.Context context)
    {
        final Map<String, String> keys = new TreeMap<>();
        for (final KeyValue kv : context.getLowCardinalityKeyValues())
        {
            keys.put(kv.getKey(), kv.getValue());
        }
        return keys;
    }

    /** A server interceptor that adds the {@code traceparent} each call arrived with ("null" if none) to a queue. */
    private static ServerInterceptor recordingTraceparents(final Queue<String> traceparents)
    {
        return new ServerInterceptor()
        {
            @Override
            public <Q, R> Publisher<R> interceptCall(final RpcContext ctx, final Flux<Q> requests,
                final ServerCallHandler<Q, R> next)
            {
                traceparents.add(String.valueOf(ctx.metadata().get(TRACEPARENT)));
                return next.handle(requests);
            }
        };
    }

    private static long count(final SimpleMeterRegistry meters, final String name)
    {
        final Timer timer = meters.find(name).timer();
        return timer == null ? 0 : timer.count();
    }

    private static final class Recorder implements ObservationHandler<Observation.Context>
    {
        final AtomicLong started = new AtomicLong();
        final Queue<Observation.Context> stopped = new ConcurrentLinkedQueue<>();

        @Override
        public void onStart(final Observation.Context context)
        {
            started.incrementAndGet();
        }

        @Override
        public void onStop(final Observation.Context context)
        {
            stopped.add(context);
        }

        @Override
        public boolean supportsContext(final Observation.Context context)
        {
            return true;
        }
    }

    private static final class Spans implements SpanExporter
    {
        final List<SpanData> ended = new CopyOnWriteArrayList<>();

        SpanData ofKind(final SpanKind kind)
        {
            final List<SpanData> ofKind = ended.stream().filter(s -> s.getKind() == kind).collect(Collectors.toList());
            assertThat(ofKind).as("spans of kind " + kind + " in " + ended).hasSize(1);
            return ofKind.get(0);
        }

        @Override
        public CompletableResultCode export(final Collection<SpanData> spans)
        {
            ended.addAll(spans);
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
