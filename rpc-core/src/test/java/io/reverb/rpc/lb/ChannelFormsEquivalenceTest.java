package io.reverb.rpc.lb;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.protobuf.StringValue;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.reverb.rpc.CallOptions;
import io.reverb.rpc.ClientCallContext;
import io.reverb.rpc.ClientInterceptor;
import io.reverb.rpc.MethodDescriptor;
import io.reverb.rpc.RetryPolicy;
import io.reverb.rpc.RpcChannel;
import io.reverb.rpc.RpcContext;
import io.reverb.rpc.RpcException;
import io.reverb.rpc.RpcServer;
import io.reverb.rpc.ServiceDefinition;
import io.reverb.rpc.Status;
import io.reverb.rpc.StatusCode;
import io.reverb.rpc.protobuf.ProtoMarshaller;
import io.reverb.rpc.stub.ServerCalls;
import io.reverb.rpc.testing.Await;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;

/**
 * The balancer always picks: the same channel built from one address ({@code builder(uri)}), a list of that one
 * address ({@code builder(List.of(uri))}) and a resolver target naming it ({@code "static:" + uri}) behaves the same
 * in every setting: interceptors run once per call (not per attempt), a retry policy makes the same attempts, a
 * refused call is resent transparently, or not at all with {@code transparentRetry(false)}, and the default deadline
 * reaches the server the same way. Attempts are counted on the server (handler invocations) and on the client
 * ({@code reverb.client.calls}, recorded once per attempt by the subchannel); nothing is timed.
 */
class ChannelFormsEquivalenceTest
{
    private static final AtomicInteger IDS = new AtomicInteger();
    private static final Duration TIMEOUT = Duration.ofSeconds(20);
    private static final String SERVICE = "reverb.test.Forms";
    private static final MethodDescriptor<StringValue, StringValue> FLAKY = method("Flaky");
    private static final MethodDescriptor<StringValue, StringValue> HOLD = method("Hold");
    private static final MethodDescriptor<StringValue, StringValue> DEADLINE = method("Deadline");

    private final String uri = "inproc://forms-" + IDS.incrementAndGet();
    private final AtomicInteger flakyCalls = new AtomicInteger();
    private final AtomicInteger held = new AtomicInteger();
    private final Sinks.Empty<Void> gate = Sinks.empty();
    private final List<AutoCloseable> closeables = new ArrayList<>();

    private static MethodDescriptor<StringValue, StringValue> method(final String name)
    {
        return MethodDescriptor.<StringValue, StringValue>newBuilder()
            .type(MethodDescriptor.MethodType.UNARY)
            .fullMethodName(MethodDescriptor.generateFullMethodName(SERVICE, name))
            .requestMarshaller(ProtoMarshaller.of(StringValue.getDefaultInstance()))
            .responseMarshaller(ProtoMarshaller.of(StringValue.getDefaultInstance()))
            .build();
    }

    /** The same address, three ways. */
    private RpcChannel.Builder form(final String how)
    {
        switch (how)
        {
            case "one address":
                return RpcChannel.builder(uri);
            case "a list of one":
                return RpcChannel.builder(List.of(uri));
            default:
                return RpcChannel.builder("static:" + uri);
        }
    }

    /**
     * Flaky fails UNAVAILABLE while the request's number is above the calls it has seen; Hold waits for the gate;
     * Deadline answers whether the call came with a deadline.
     */
    private void startServer(final Function<RpcServer.Builder, RpcServer.Builder> settings)
    {
        final ServiceDefinition service = ServiceDefinition.builder(SERVICE)
            .addMethod(FLAKY, ServerCalls.unary(r ->
            {
                final int call = flakyCalls.incrementAndGet();
                return call <= Integer.parseInt(r.getValue()) ?
                    Mono.error(Status.UNAVAILABLE.withDescription("attempt " + call + " fails").asException()) :
                    Mono.just(StringValue.of("ok"));
            }))
            .addMethod(HOLD, ServerCalls.unary(r ->
            {
                held.incrementAndGet();
                return gate.asMono().then(Mono.just(r));
            }))
            .addMethod(DEADLINE, ServerCalls.unary(r -> Mono.deferContextual(c ->
                Mono.just(StringValue.of(RpcContext.from(c).deadline() == null ? "none" : "set")))))
            .build();
        final RpcServer server = settings.apply(RpcServer.builder(uri).addService(service)).build().start();
        closeables.add(() ->
        {
            gate.tryEmitEmpty();
            server.shutdown(Duration.ZERO);
            server.awaitTermination(TIMEOUT);
        });
    }

    private RpcChannel channel(final RpcChannel.Builder builder)
    {
        final RpcChannel channel = builder.build();
        closeables.add(0, channel);
        return channel;
    }

    @AfterEach
    void close() throws Exception
    {
        for (final AutoCloseable closeable : closeables)
        {
            closeable.close();
        }
    }

    /** Counts the calls (not the attempts) each interceptor sees. */
    private static ClientInterceptor counting(final AtomicInteger calls)
    {
        return new ClientInterceptor()
        {
            @Override
            public <Req, Resp> Flux<Resp> interceptCall(final ClientCallContext call, final Flux<Req> requests,
                final Next<Req, Resp> next)
            {
                calls.incrementAndGet();
                return next.call(requests);
            }
        };
    }

    private static long clientAttempts(final SimpleMeterRegistry registry, final StatusCode status)
    {
        final Timer timer = registry.find("reverb.client.calls").tag("status", status.name()).timer();
        return timer == null ? 0 : timer.count();
    }

    @ParameterizedTest
    @ValueSource(strings = {"one address", "a list of one", "a resolver target"})
    void shouldRunInterceptorsOncePerCallAroundTheAttemptsOfARetryPolicy(final String how)
    {
        startServer(b -> b);
        final AtomicInteger intercepted = new AtomicInteger();
        final SimpleMeterRegistry registry = new SimpleMeterRegistry();
        final RpcChannel channel = channel(form(how).intercept(counting(intercepted)).meterRegistry(registry)
            .retryPolicy(SERVICE, RetryPolicy.builder().maxAttempts(3)
                .backoff(Duration.ofMillis(1), Duration.ofMillis(1), 1.0)
                .retryableCodes(StatusCode.UNAVAILABLE).build()));

        // two attempts fail UNAVAILABLE, the third answers: one call
        assertThat(channel.newUnaryCall(FLAKY, CallOptions.DEFAULT, StringValue.of("2")).block(TIMEOUT))
            .isEqualTo(StringValue.of("ok"));

        assertThat(flakyCalls).as(how + ": attempts the server saw").hasValue(3);
        assertThat(clientAttempts(registry, StatusCode.UNAVAILABLE)).as(how + ": failed attempts").isEqualTo(2);
        assertThat(clientAttempts(registry, StatusCode.OK)).as(how + ": answered attempts").isEqualTo(1);
        assertThat(intercepted).as(how + ": interceptor runs per call").hasValue(1);
    }

    @ParameterizedTest
    @ValueSource(strings = {"one address", "a list of one", "a resolver target"})
    void shouldResendARefusedCallTransparentlyOncePerCallInterceptor(final String how)
    {
        final AtomicInteger intercepted = new AtomicInteger();
        final SimpleMeterRegistry registry = new SimpleMeterRegistry();
        final long refusals = refusalsOfOneCall(form(how).intercept(counting(intercepted)).meterRegistry(registry),
            registry);
        // the first attempt and five transparent retries, all refused while the one slot is taken
        assertThat(refusals).as(how + ": attempts refused").isEqualTo(6);
        assertThat(intercepted).as(how + ": interceptor runs per call").hasValue(2);
    }

    @ParameterizedTest
    @ValueSource(strings = {"one address", "a list of one", "a resolver target"})
    void shouldNotResendARefusedCallWithoutTransparentRetry(final String how)
    {
        final AtomicInteger intercepted = new AtomicInteger();
        final SimpleMeterRegistry registry = new SimpleMeterRegistry();
        final long refusals = refusalsOfOneCall(form(how).transparentRetry(false).intercept(counting(intercepted))
            .meterRegistry(registry), registry);
        assertThat(refusals).as(how + ": attempts refused").isEqualTo(1);
        assertThat(intercepted).as(how + ": interceptor runs per call").hasValue(2);
    }

    /**
     * One call per connection: a held call takes the slot, and a second call on the same connection is refused
     * (RESOURCE_EXHAUSTED, flagged refused: the server never ran it) however often it is resent.
     *
     * @return the attempts of the second call the subchannel recorded as RESOURCE_EXHAUSTED.
     */
    private long refusalsOfOneCall(final RpcChannel.Builder builder, final SimpleMeterRegistry registry)
    {
        startServer(b -> b.maxConcurrentCallsPerConnection(1));
        final RpcChannel channel = channel(builder);
        channel.newUnaryCall(HOLD, CallOptions.DEFAULT.withWaitForReady(), StringValue.of("hold")).subscribe();
        Await.until("the first call holds the connection's one slot", TIMEOUT, () -> held.get() == 1);

        assertThatThrownBy(() -> channel.newUnaryCall(FLAKY, CallOptions.DEFAULT, StringValue.of("0")).block(TIMEOUT))
            .isInstanceOfSatisfying(RpcException.class,
                e -> assertThat(e.status().code()).isEqualTo(StatusCode.RESOURCE_EXHAUSTED));
        assertThat(flakyCalls).as("the refused call never ran").hasValue(0);
        return clientAttempts(registry, StatusCode.RESOURCE_EXHAUSTED);
    }

    @ParameterizedTest
    @ValueSource(strings = {"one address", "a list of one", "a resolver target"})
    void shouldApplyTheDefaultDeadlineToEveryCallAndLetTheCallsOwnWin(final String how)
    {
        startServer(b -> b);
        final RpcChannel withDefault = channel(form(how).defaultDeadline(Duration.ofHours(1)));
        final RpcChannel without = channel(form(how));
        final StringValue any = StringValue.of("");

        assertThat(withDefault.newUnaryCall(DEADLINE, CallOptions.DEFAULT, any).block(TIMEOUT).getValue())
            .as(how + ": default deadline sent").isEqualTo("set");
        assertThat(withDefault.newCall(DEADLINE, CallOptions.DEFAULT, Mono.just(any)).blockLast(TIMEOUT).getValue())
            .as(how + ": default deadline sent with newCall too").isEqualTo("set");
        assertThat(without.newUnaryCall(DEADLINE, CallOptions.DEFAULT, any).block(TIMEOUT).getValue())
            .as(how + ": no deadline").isEqualTo("none");
        // a deadline already passed: the call's own deadline wins over the default, and the call never leaves
        assertThatThrownBy(() -> withDefault.newUnaryCall(FLAKY,
            CallOptions.DEFAULT.withDeadlineAfter(Duration.ofNanos(-1)), StringValue.of("0")).block(TIMEOUT))
            .isInstanceOfSatisfying(RpcException.class,
                e -> assertThat(e.status().code()).isEqualTo(StatusCode.DEADLINE_EXCEEDED));
        assertThat(flakyCalls).as(how + ": an expired call is not sent").hasValue(0);
    }
}
