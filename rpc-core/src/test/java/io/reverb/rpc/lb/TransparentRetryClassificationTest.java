package io.reverb.rpc.lb;

import io.reverb.rpc.ConnectivityState;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import com.google.protobuf.StringValue;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.reverb.rpc.CallOptions;
import io.reverb.rpc.ClientCallContext;
import io.reverb.rpc.ClientInterceptor;
import io.reverb.rpc.MethodDescriptor;
import io.reverb.rpc.RpcChannel;
import io.reverb.rpc.RpcException;
import io.reverb.rpc.RpcServer;
import io.reverb.rpc.ServiceDefinition;
import io.reverb.rpc.Status;
import io.reverb.rpc.StatusCode;
import io.reverb.rpc.retry.AttemptFailure;
import io.reverb.rpc.retry.CallFailureCause;
import io.reverb.rpc.stub.ServerCalls;
import io.reverb.rpc.testing.Await;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * Transparent retries are decided from the {@link CallFailureCause} the runtime attaches (and the REFUSED flag a
 * server sets on the STATUS of a call it refused before dispatch), never from status descriptions: a server's
 * refusal is retried on another replica for a method that is not idempotent, while a handler's status that merely
 * reads like a refusal is given to the caller after one attempt.
 */
class TransparentRetryClassificationTest
{
    private static final Duration TIMEOUT = ReplicaServers.TIMEOUT;
    private static final String SERVICE = "reverb.test.Refuse";
    private static final MethodDescriptor<StringValue, StringValue> CALL = ReplicaServers.unaryMethod(SERVICE, "Call");

    private final ReplicaServers servers = new ReplicaServers();
    private final List<AtomicInteger> handled = new ArrayList<>();
    private final AtomicInteger refusedAttempts = new AtomicInteger();
    private BalancedChannel channel;

    @AfterEach
    void tearDown() throws Exception
    {
        servers.closeAll(channel);
    }

    /**
     * A replica: "hold" never answers; "refusal-text" and "goaway-text" fail with statuses whose descriptions read
     * like the runtime's own refusals; anything else answers the replica's index.
     */
    private String replica(final int limit)
    {
        final int index = servers.size();
        final AtomicInteger count = new AtomicInteger();
        final String uri = "inproc://" + ReplicaServers.newName("refuse");
        final RpcServer.Builder builder = RpcServer.builder(uri).addService(ServiceDefinition.builder(SERVICE)
            .addMethod(CALL, ServerCalls.unary(request ->
            {
                count.incrementAndGet();
                switch (request.getValue())
                {
                    case "hold":
                        return Mono.never();
                    case "refusal-text":
                        return Mono.error(Status.RESOURCE_EXHAUSTED
                            .withDescription("too many concurrent calls on this connection: limit 1").asException());
                    case "goaway-text":
                        return Mono.error(Status.UNAVAILABLE.withDescription("server going away: drained").asException());
                    default:
                        return Mono.just(StringValue.of(Integer.toString(index)));
                }
            })).build());
        if (limit > 0)
        {
            builder.maxConcurrentCallsPerConnection(limit);
        }
        servers.start(builder);
        handled.add(count);
        return uri;
    }

    /** Records every attempt's status ({@code reverb.client.calls}, once per attempt, by the subchannels). */
    private final SimpleMeterRegistry attempts = new SimpleMeterRegistry();

    /** Counts calls that ended with a structural refusal (interceptors run once per call, around its attempts). */
    private final ClientInterceptor countRefusals = new ClientInterceptor()
    {
        @Override
        public <Req, Resp> Flux<Resp> interceptCall(final ClientCallContext call, final Flux<Req> requests,
            final Next<Req, Resp> next)
        {
            return next.call(requests).doOnError(e ->
            {
                if (CallFailureCause.attemptFailure(Status.fromThrowable(e)) == AttemptFailure.REFUSED)
                {
                    refusedAttempts.incrementAndGet();
                }
            });
        }
    };

    private void connect(final List<String> uris)
    {
        channel = (BalancedChannel) RpcChannel.builder(uris).loadBalancingPolicy("round_robin")
            .intercept(countRefusals)
            .meterRegistry(attempts)
            .build();
        Await.until("both ready", TIMEOUT, () ->
            channel.subchannels().stream().filter(s -> s.state() == ConnectivityState.READY).count() == uris.size());
    }

    private Mono<StringValue> call(final String value)
    {
        return channel.newUnaryCall(CALL, CallOptions.DEFAULT.withDeadlineAfter(TIMEOUT), StringValue.of(value));
    }

    @Test
    void shouldRetryACallTheServerRefusedBeforeDispatchOnAnotherReplicaThoughNotIdempotent()
    {
        connect(List.of(replica(1), replica(1)));
        // warm both connections, then fill one replica's single slot with a call that never ends
        for (int i = 0; i < 4; i++)
        {
            call("x").block(TIMEOUT);
        }
        final Disposable held = call("hold").subscribe();
        Await.until("the held call runs", TIMEOUT, () -> handled.get(0).get() + handled.get(1).get() == 5);
        final int full = handled.get(0).get() == 3 ? 0 : 1;
        final int free = 1 - full;

        final int[] answeredBy = new int[2];
        for (int i = 0; i < 20; i++)
        {
            answeredBy[Integer.parseInt(call("x").block(TIMEOUT).getValue())]++;
        }

        assertThat(answeredBy[free]).as("every call answered by the free replica").isEqualTo(20);
        assertThat(handled.get(full).get()).as("no handler ran on the full replica").isEqualTo(3);
        // round_robin alternates: about half the calls were first picked onto the full replica and refused there,
        // then resent: no call ended refused, but attempts did
        final Timer refused = attempts.find("reverb.client.calls").tag("status", "RESOURCE_EXHAUSTED").timer();
        assertThat(refused == null ? 0 : refused.count()).as("attempts refused").isPositive();
        assertThat(refusedAttempts.get()).as("calls that ended refused").isZero();
        held.dispose();
    }

    @Test
    void shouldNotRetryAHandlersStatusThatOnlyReadsLikeARefusal()
    {
        connect(List.of(replica(0), replica(0)));

        final RpcException limit = catchThrowableOfType(RpcException.class, () -> call("refusal-text").block(TIMEOUT));
        final RpcException goAway = catchThrowableOfType(RpcException.class, () -> call("goaway-text").block(TIMEOUT));

        assertThat(limit.status().code()).isEqualTo(StatusCode.RESOURCE_EXHAUSTED);
        assertThat(goAway.status().code()).isEqualTo(StatusCode.UNAVAILABLE);
        assertThat(handled.get(0).get() + handled.get(1).get()).as("one attempt each, no retry").isEqualTo(2);
        assertThat(refusedAttempts.get()).isZero();
    }

    @Test
    void shouldClassifyByTheAttachedCauseOnly()
    {
        final IOException connectError = new IOException("connection refused");
        final Status notSent = Status.UNAVAILABLE.withDescription("whatever")
            .withCause(CallFailureCause.of(CallFailureCause.Reason.CONNECT_FAILED, connectError));
        assertThat(BalancedChannel.classify(notSent)).isEqualTo(AttemptFailure.NOT_SENT);
        assertThat(CallFailureCause.find(notSent).getCause()).isSameAs(connectError);
        assertThat(BalancedChannel.classify(Status.UNAVAILABLE
            .withCause(CallFailureCause.of(CallFailureCause.Reason.CHANNEL_CLOSED)))).isEqualTo(AttemptFailure.NOT_SENT);
        assertThat(BalancedChannel.classify(Status.UNAVAILABLE
            .withCause(CallFailureCause.of(CallFailureCause.Reason.GOAWAY)))).isEqualTo(AttemptFailure.REFUSED);
        assertThat(BalancedChannel.classify(Status.RESOURCE_EXHAUSTED
            .withCause(CallFailureCause.of(CallFailureCause.Reason.REFUSED_BY_SERVER)))).isEqualTo(AttemptFailure.REFUSED);
        assertThat(BalancedChannel.classify(Status.UNAVAILABLE
            .withCause(CallFailureCause.of(CallFailureCause.Reason.CONNECTION_LOST)))).isEqualTo(AttemptFailure.PROCESSED);
        // found through a chain of causes, as an interceptor may wrap it
        assertThat(BalancedChannel.classify(Status.UNAVAILABLE.withCause(new IllegalStateException("wrapped",
            CallFailureCause.of(CallFailureCause.Reason.GOAWAY))))).isEqualTo(AttemptFailure.REFUSED);
        // descriptions alone mean nothing
        assertThat(BalancedChannel.classify(Status.UNAVAILABLE.withDescription("cannot connect to inproc://x: gone")))
            .isEqualTo(AttemptFailure.PROCESSED);
        assertThat(BalancedChannel.classify(Status.UNAVAILABLE.withDescription("server going away: x")))
            .isEqualTo(AttemptFailure.PROCESSED);
        // the shared causes cannot be altered by whoever receives them
        final CallFailureCause shared = CallFailureCause.of(CallFailureCause.Reason.GOAWAY);
        assertThatThrownBy(() -> shared.initCause(connectError))
            .isInstanceOf(IllegalStateException.class);
        shared.addSuppressed(connectError);
        assertThat(shared.getSuppressed()).isEmpty();
    }
}
