package io.reverb.rpc.lb;

import io.reverb.rpc.ConnectivityState;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import com.google.protobuf.StringValue;
import io.reverb.rpc.RpcChannel;
import io.reverb.rpc.CallOptions;
import io.reverb.rpc.MethodDescriptor;
import io.reverb.rpc.RpcException;
import io.reverb.rpc.RpcServer;
import io.reverb.rpc.ServiceDefinition;
import io.reverb.rpc.Status;
import io.reverb.rpc.StatusCode;
import io.reverb.rpc.HedgingPolicy;
import io.reverb.rpc.RetryPolicy;
import io.reverb.rpc.stub.ServerCalls;
import io.reverb.rpc.testing.Await;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;

/**
 * Hedged unary calls over several {@code inproc://} replicas, counted on the servers: which replica each attempt
 * reached, and how many attempts each server saw cancelled.
 */
class HedgingTest
{
    private static final Duration TIMEOUT = ReplicaServers.TIMEOUT;
    private static final String SERVICE = "reverb.test.Hedge";
    private static final MethodDescriptor<StringValue, StringValue> HEDGED = ReplicaServers.unaryMethod(SERVICE, "Hedged");
    private static final MethodDescriptor<StringValue, StringValue> PLAIN = ReplicaServers.unaryMethod(SERVICE, "Plain");

    private final ReplicaServers servers = new ReplicaServers();
    private final List<Replica> replicas = new ArrayList<>();
    private BalancedChannel channel;

    /** How a replica answers. */
    private enum Mode
    {
        ANSWER, NEVER, HOLD, FAIL_UNAVAILABLE
    }

    /** One server answering per its mode, counting calls and the calls cancelled under its handler. */
    private static final class Replica
    {
        final String name = ReplicaServers.newName("hedge");
        final String uri = "inproc://" + name;
        final AtomicInteger calls = new AtomicInteger();
        final AtomicInteger cancelled = new AtomicInteger();
        final Sinks.Empty<Void> gate = Sinks.empty();
        final RpcServer server;
        volatile Mode mode;

        Replica(final ReplicaServers servers, final Mode mode)
        {
            this.mode = mode;
            final ServiceDefinition.Builder service = ServiceDefinition.builder(SERVICE);
            for (final MethodDescriptor<StringValue, StringValue> m : List.of(HEDGED, PLAIN))
            {
                service.addMethod(m, ServerCalls.unary(this::handle));
            }
            server = servers.start(RpcServer.builder(uri).addService(service.build()));
        }

        private Mono<StringValue> handle(final StringValue request)
        {
            calls.incrementAndGet();
            final Mono<StringValue> answer = Mono.just(StringValue.of(name));
            final Mono<StringValue> response;
            switch (mode)
            {
                case NEVER:
                    response = Mono.never();
                    break;
                case HOLD:
                    response = gate.asMono().then(answer);
                    break;
                case FAIL_UNAVAILABLE:
                    response = Mono.error(Status.UNAVAILABLE.withDescription("overloaded").asException());
                    break;
                default:
                    response = answer;
            }
            return response.doOnCancel(cancelled::incrementAndGet);
        }
    }

    @AfterEach
    void tearDown() throws Exception
    {
        servers.closeAll(channel);
    }

    private List<String> start(final Mode... modes)
    {
        final List<String> uris = new ArrayList<>();
        for (final Mode mode : modes)
        {
            final Replica replica = new Replica(servers, mode);
            replicas.add(replica);
            uris.add(replica.uri);
        }
        return uris;
    }

    private void awaitReady()
    {
        Await.until("all ready", TIMEOUT, () -> channel.subchannels().stream()
            .filter(s -> s.state() == ConnectivityState.READY).count() == replicas.size());
    }

    private Mono<StringValue> call(final MethodDescriptor<StringValue, StringValue> method, final Duration deadline)
    {
        return channel.newUnaryCall(method, CallOptions.DEFAULT.withDeadlineAfter(deadline), StringValue.of("x"));
    }

    private int totalCalls()
    {
        return replicas.stream().mapToInt(r -> r.calls.get()).sum();
    }

    @Test
    void shouldCompleteEveryCallThroughAnotherReplicaWhenOneNeverAnswersAndCancelItsAttempts()
    {
        channel = (BalancedChannel) RpcChannel.builder(start(Mode.ANSWER, Mode.ANSWER, Mode.NEVER))
            .loadBalancingPolicy("round_robin")
            .hedgingPolicy(SERVICE, HedgingPolicy.builder().maxAttempts(3).hedgingDelay(Duration.ofMillis(20)).build())
            .build();
        awaitReady();
        final Replica slow = replicas.get(2);

        for (int i = 0; i < 30; i++)
        {
            assertThat(call(HEDGED, TIMEOUT).block(TIMEOUT).getValue()).isNotEqualTo(slow.name);
        }

        // round_robin put about a third of the first attempts on the slow replica: each was hedged elsewhere, and
        // every attempt the slow replica got was cancelled once another answered
        assertThat(slow.calls.get()).isPositive();
        Await.until("every attempt on the slow replica cancelled", TIMEOUT,
            () -> slow.cancelled.get() == slow.calls.get());
        assertThat(replicas.get(0).cancelled.get() + replicas.get(1).cancelled.get())
            .as("a fast replica's attempt is cancelled only when it lost a race").isLessThanOrEqualTo(
                replicas.get(0).calls.get() + replicas.get(1).calls.get() - 30);
        // a loser's CANCEL can reach its server before the client thread that sent it counts the attempt out
        Await.until("every attempt counted out", TIMEOUT,
            () -> channel.subchannels().stream().allMatch(s -> s.load().outstanding() == 0));
    }

    @Test
    void shouldSendEachHedgeToAReplicaTheOthersDoNotUseAndCancelTheLosers()
    {
        channel = (BalancedChannel) RpcChannel.builder(start(Mode.HOLD, Mode.HOLD, Mode.HOLD)).loadBalancingPolicy("round_robin")
            .hedgingPolicy(HEDGED.fullMethodName(), HedgingPolicy.builder().maxAttempts(3)
                .hedgingDelay(Duration.ofMillis(5)).build())
            .build();
        awaitReady();

        final Mono<StringValue> answer = call(HEDGED, TIMEOUT).cache();
        answer.subscribe();
        Await.until("three attempts out", TIMEOUT, () -> totalCalls() == 3);
        assertThat(replicas).allSatisfy(r -> assertThat(r.calls.get()).as(r.name).isEqualTo(1));

        final Replica winner = replicas.get(1);
        winner.gate.tryEmitEmpty();
        assertThat(answer.block(TIMEOUT).getValue()).isEqualTo(winner.name);
        Await.until("both losers cancelled on their servers", TIMEOUT,
            () -> replicas.get(0).cancelled.get() == 1 && replicas.get(2).cancelled.get() == 1);
        assertThat(winner.cancelled.get()).isZero();
        assertThat(totalCalls()).as("no fourth attempt").isEqualTo(3);
    }

    @Test
    void shouldSendAllAttemptsAtOnceWithAZeroDelay()
    {
        channel = (BalancedChannel) RpcChannel.builder(start(Mode.HOLD, Mode.HOLD)).loadBalancingPolicy("round_robin")
            .hedgingPolicy(SERVICE, HedgingPolicy.builder().maxAttempts(2).hedgingDelay(Duration.ZERO).build())
            .build();
        awaitReady();

        final Mono<StringValue> answer = call(HEDGED, TIMEOUT).cache();
        answer.subscribe();
        Await.until("two attempts out", TIMEOUT, () -> totalCalls() == 2);
        replicas.get(0).gate.tryEmitEmpty();
        assertThat(answer.block(TIMEOUT).getValue()).isEqualTo(replicas.get(0).name);
        Await.until("the loser cancelled", TIMEOUT, () -> replicas.get(1).cancelled.get() == 1);
        assertThat(replicas).allSatisfy(r -> assertThat(r.calls.get()).isEqualTo(1));
    }

    @Test
    void shouldNotHedgeAMethodThatIsNotMarkedIdempotent()
    {
        channel = (BalancedChannel) RpcChannel.builder(start(Mode.NEVER, Mode.ANSWER))
            .hedgingPolicy(HEDGED.fullMethodName(), HedgingPolicy.builder().maxAttempts(2)
                .hedgingDelay(Duration.ofMillis(1)).build())
            .build(); // pick_first: every call goes to the first replica, which never answers
        awaitReadyFirst();

        final RpcException e = catchThrowableOfType(RpcException.class,
            () -> call(PLAIN, Duration.ofMillis(300)).block(TIMEOUT));

        assertThat(e.status().code()).isEqualTo(StatusCode.DEADLINE_EXCEEDED);
        assertThat(replicas.get(0).calls.get()).isEqualTo(1);
        assertThat(replicas.get(1).calls.get()).isZero();
        Await.until("the expired call cancelled on its server", TIMEOUT, () -> replicas.get(0).cancelled.get() == 1);
    }

    @Test
    void shouldSendTheNextHedgeAtOnceAfterANonFatalFailureAndStopAtAFatalOne()
    {
        final List<String> uris = start(Mode.FAIL_UNAVAILABLE, Mode.ANSWER);
        final Replica failing = replicas.get(0);
        final Replica answering = replicas.get(1);
        // the hedging delay never comes: only a non-fatal failure lets the next hedge go
        channel = (BalancedChannel) RpcChannel.builder(uris).loadBalancingPolicy("round_robin").hedgingPolicy(SERVICE,
            HedgingPolicy.builder().maxAttempts(2).hedgingDelay(Duration.ofHours(1))
                .nonFatalCodes(StatusCode.UNAVAILABLE).build()).build();
        awaitReady();

        for (int i = 0; i < 10; i++)
        {
            assertThat(call(HEDGED, TIMEOUT).block(TIMEOUT).getValue()).isEqualTo(answering.name);
        }
        assertThat(answering.calls.get()).isEqualTo(10);
        assertThat(failing.calls.get()).as("round_robin sent first attempts there too").isPositive();

        channel.close();
        channel = (BalancedChannel) RpcChannel.builder(uris).loadBalancingPolicy("round_robin").hedgingPolicy(SERVICE,
            HedgingPolicy.builder().maxAttempts(2).hedgingDelay(Duration.ofHours(1)).build()).build(); // fatal now
        awaitReady();
        final int failingBefore = failing.calls.get();
        int failed = 0;
        for (int i = 0; i < 10; i++)
        {
            try
            {
                assertThat(call(HEDGED, TIMEOUT).block(TIMEOUT).getValue()).isEqualTo(answering.name);
            }
            catch (final RpcException e)
            {
                assertThat(e.status().description()).isEqualTo("overloaded");
                failed++;
            }
        }
        assertThat(failed).as("every call whose first attempt failed, failed: no hedge after a fatal code")
            .isEqualTo(failing.calls.get() - failingBefore).isPositive();
        assertThat(answering.calls.get()).isEqualTo(10 + 10 - failed);
    }

    private void awaitReadyFirst()
    {
        Await.until("first ready", TIMEOUT, () -> channel.state() == ConnectivityState.READY);
    }

    @Test
    void shouldStopHedgingOnceTheRetryBudgetIsSpent()
    {
        channel = (BalancedChannel) RpcChannel.builder(start(Mode.FAIL_UNAVAILABLE))
            .hedgingPolicy(SERVICE, HedgingPolicy.builder().maxAttempts(3).hedgingDelay(Duration.ofHours(1))
                .nonFatalCodes(StatusCode.UNAVAILABLE).build())
            .retryThrottling(10, 0.1)
            .build();

        int failed = 0;
        for (int i = 0; i < 10; i++)
        {
            try
            {
                call(HEDGED, TIMEOUT).block(TIMEOUT);
            }
            catch (final RpcException e)
            {
                failed++;
            }
        }

        assertThat(failed).isEqualTo(10);
        // tokens 10 -> 7 in the first call's 3 attempts, 7 -> 5 in the second's 2 (hedges need more than 5),
        // then 1 attempt per call
        assertThat(replicas.get(0).calls.get()).isEqualTo(3 + 2 + 8);
    }

    @Test
    void shouldRefuseARetryPolicyAndAHedgingPolicyForTheSameMethod()
    {
        assertThatThrownBy(() -> RpcChannel.builder(List.of("inproc://nobody"))
            .retryPolicy(SERVICE, RetryPolicy.builder().build())
            .hedgingPolicy(SERVICE, HedgingPolicy.builder().build())
            .build()).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("choose one");
        assertThatThrownBy(() -> HedgingPolicy.builder().maxAttempts(6).build())
            .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("maxAttempts");
        assertThatThrownBy(() -> HedgingPolicy.builder().hedgingDelay(Duration.ofMillis(-1)).build())
            .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("hedgingDelay");
    }
}
