package io.reverb.rpc.lb;

import io.reverb.rpc.ConnectivityState;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.protobuf.Int32Value;
import com.google.protobuf.StringValue;
import io.reverb.rpc.RpcChannel;
import io.reverb.rpc.CallOptions;
import io.reverb.rpc.MethodDescriptor;
import io.reverb.rpc.RpcException;
import io.reverb.rpc.RpcServer;
import io.reverb.rpc.ServiceDefinition;
import io.reverb.rpc.Status;
import io.reverb.rpc.StatusCode;
import io.reverb.rpc.health.HealthProtocol;
import io.reverb.rpc.resolver.NameResolver;
import io.reverb.rpc.RetryPolicy;
import io.reverb.rpc.stub.ClientCalls;
import io.reverb.rpc.stub.ServerCalls;
import io.reverb.rpc.testing.Await;
import io.reverb.rpc.transport.inproc.InprocTransportProvider;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;

/**
 * A {@link BalancedChannel} over several {@code inproc://} servers: spreading, health, transparent retries,
 * retry policy and budget, resolver updates. Outcomes are counted per replica.
 */
class BalancedChannelTest
{
    private static final Duration TIMEOUT = ReplicaServers.TIMEOUT;
    private static final String SERVICE = "reverb.test.Replica";
    private static final MethodDescriptor<StringValue, StringValue> WHO = ReplicaServers.unaryMethod(SERVICE, "Who");

    private final ReplicaServers servers = new ReplicaServers();
    private final List<Replica> replicas = new ArrayList<>();
    private BalancedChannel channel;

    /** One server: answers its name, can fail, hold calls, and report a health status. */
    private static final class Replica
    {
        final String name = ReplicaServers.newName("bal");
        final String uri = "inproc://" + name;
        final AtomicInteger calls = new AtomicInteger();
        final AtomicInteger failNext = new AtomicInteger();
        final List<String> requests = new CopyOnWriteArrayList<>();
        final Sinks.Many<Int32Value> health = Sinks.many().replay().latest();
        volatile Sinks.Empty<Void> gate;
        final RpcServer server;

        Replica(final ReplicaServers servers)
        {
            health.tryEmitNext(Int32Value.of(HealthProtocol.SERVING));
            server = servers.start(RpcServer.builder(uri).addService(ServiceDefinition.builder(SERVICE)
                    .addMethod(WHO, ServerCalls.unary(this::who)).build())
                .addService(ServiceDefinition.builder(HealthProtocol.SERVICE_NAME)
                    .addMethod(HealthProtocol.WATCH, ServerCalls.serverStreaming(r -> health.asFlux())).build()));
        }

        private Mono<StringValue> who(final StringValue request)
        {
            calls.incrementAndGet();
            requests.add(request.getValue());
            if (failNext.getAndUpdate(n -> Math.max(0, n - 1)) > 0)
            {
                return Mono.error(Status.UNAVAILABLE.withDescription("overloaded").asException());
            }
            final Sinks.Empty<Void> g = gate;
            final Mono<StringValue> answer = Mono.just(StringValue.of(name));
            return g == null || !request.getValue().equals("hold") ? answer : g.asMono().then(answer);
        }

        void health(final int status)
        {
            health.tryEmitNext(Int32Value.of(status));
        }
    }

    /** @return a resolver that answers {@code first} when started and hands its listener to the test. */
    private static NameResolver resolverStartingWith(final String first, final NameResolver.Listener[] listener)
    {
        return new NameResolver()
        {
            @Override
            public void start(final Listener l)
            {
                listener[0] = l;
                l.onAddresses(List.of(URI.create(first)));
            }

            @Override
            public void refresh()
            {
            }

            @Override
            public void shutdown()
            {
            }
        };
    }

    @AfterEach
    void tearDown() throws Exception
    {
        servers.closeAll(channel);
    }

    private List<String> start(final int n)
    {
        final List<String> uris = new ArrayList<>();
        for (int i = 0; i < n; i++)
        {
            final Replica replica = new Replica(servers);
            replicas.add(replica);
            uris.add(replica.uri);
        }
        return uris;
    }

    private String call()
    {
        return channel.newUnaryCall(WHO, CallOptions.DEFAULT.withDeadlineAfter(TIMEOUT), StringValue.of("x"))
            .block(TIMEOUT).getValue();
    }

    private Map<String, Integer> calls(final int n)
    {
        final Map<String, Integer> counts = new HashMap<>();
        for (int i = 0; i < n; i++)
        {
            counts.merge(call(), 1, Integer::sum);
        }
        return counts;
    }

    private void awaitReady(final int n)
    {
        Await.until(n + " subchannels ready", TIMEOUT, () ->
            channel.subchannels().stream().filter(s -> s.state() == ConnectivityState.READY).count() == n);
    }

    /** The picker is published just after the state changes: wait until calls reach exactly these replicas. */
    private void awaitPicking(final Replica... expected)
    {
        final Set<String> names = new HashSet<>();
        for (final Replica replica : expected)
        {
            names.add(replica.name);
        }
        Await.until("calls reach exactly " + names, TIMEOUT, () -> calls(3 * expected.length).keySet().equals(names));
    }

    @Test
    void shouldSpreadCallsEvenlyWithRoundRobin()
    {
        channel = (BalancedChannel) RpcChannel.builder(start(3)).loadBalancingPolicy("round_robin").healthCheck("").build();
        awaitReady(3);
        awaitPicking(replicas.get(0), replicas.get(1), replicas.get(2));

        final Map<String, Integer> counts = calls(300);

        assertThat(counts).hasSize(3);
        assertThat(counts.values()).containsOnly(100);
        // every call was counted in and out, and none timed: round_robin reads no latency (SubchannelLoad.startCall)
        assertThat(channel.subchannels()).allSatisfy(s ->
        {
            assertThat(s.load().outstanding()).isZero();
            assertThat(s.load().latencyNanos(s.load().clock().getAsLong())).isZero();
        });
    }

    @Test
    void shouldSendEverythingToTheFirstAddressWithPickFirst()
    {
        final List<String> uris = start(2);
        channel = (BalancedChannel) RpcChannel.builder(uris).build();

        assertThat(calls(20)).containsOnlyKeys(replicas.get(0).name);
        assertThat(replicas.get(1).calls.get()).isZero();
    }

    @Test
    void shouldStopPickingAReplicaThatReportsNotServingAndComeBackWhenServing()
    {
        channel = (BalancedChannel) RpcChannel.builder(start(3)).loadBalancingPolicy("round_robin").healthCheck("").build();
        awaitReady(3);
        final Replica sick = replicas.get(1);

        sick.health(HealthProtocol.NOT_SERVING);
        awaitReady(2);
        awaitPicking(replicas.get(0), replicas.get(2));
        assertThat(calls(100)).doesNotContainKey(sick.name).hasSize(2);

        sick.health(HealthProtocol.SERVING);
        awaitReady(3);
        awaitPicking(replicas.get(0), replicas.get(1), replicas.get(2));
        assertThat(calls(99)).containsEntry(sick.name, 33);
    }

    @Test
    void shouldNotFailAnyCallWhenAReplicaIsKilled()
    {
        channel = (BalancedChannel) RpcChannel.builder(start(3)).loadBalancingPolicy("round_robin").healthCheck("").build();
        awaitReady(3);
        final Replica killed = replicas.get(0);

        killed.server.shutdown(Duration.ZERO);
        InprocTransportProvider.killConnections(killed.name);
        awaitReady(2);
        awaitPicking(replicas.get(1), replicas.get(2));

        final Map<String, Integer> counts = calls(200); // any failure would throw
        assertThat(counts).doesNotContainKey(killed.name);
        assertThat(counts.values().stream().mapToInt(Integer::intValue).sum()).isEqualTo(200);
    }

    @Test
    void shouldRetryTransparentlyOnAnotherReplicaWhenOneIsDrainedWithoutHealthChecking() throws InterruptedException
    {
        channel = (BalancedChannel) RpcChannel.builder(start(3)).loadBalancingPolicy("round_robin").build();
        awaitReady(3);
        calls(30); // every subchannel has a connection
        final Replica drained = replicas.get(2);

        drained.server.shutdown(Duration.ofSeconds(5)); // GOAWAY, then it stops listening
        assertThat(drained.server.awaitTermination(TIMEOUT)).isTrue();

        final Map<String, Integer> counts = calls(200); // calls picked onto it are refused, never failed
        assertThat(counts).doesNotContainKey(drained.name);
        assertThat(counts.values().stream().mapToInt(Integer::intValue).sum()).isEqualTo(200);
    }

    @Test
    void shouldRetryAnIdempotentMethodPerItsPolicyButNotOthers()
    {
        final List<String> uris = start(1);
        final Replica replica = replicas.get(0);
        channel = (BalancedChannel) RpcChannel.builder(uris)
            .retryPolicy(WHO.fullMethodName(), RetryPolicy.builder().maxAttempts(3)
                .backoff(Duration.ofMillis(1), Duration.ofMillis(2), 2).retryableCodes(StatusCode.UNAVAILABLE).build())
            .build();

        replica.failNext.set(2);
        assertThat(call()).isEqualTo(replica.name);
        assertThat(replica.calls.get()).isEqualTo(3);

        channel.close();
        channel = (BalancedChannel) RpcChannel.builder(uris).build(); // no policy: not idempotent
        replica.failNext.set(1);
        assertThatThrownBy(this::call).isInstanceOfSatisfying(RpcException.class,
            e -> assertThat(e.status().description()).isEqualTo("overloaded"));
        assertThat(replica.calls.get()).isEqualTo(4);
    }

    @Test
    void shouldSendTheSameRequestAgainOnARetryWithoutSubscribingToItsSourceAgain()
    {
        // grpc-java buffers what a call sent and replays it; subscribing again ran the request's side effects again
        // (a new idempotency key per attempt) and failed single-subscriber sources
        final List<String> uris = start(1);
        channel = (BalancedChannel) RpcChannel.builder(uris)
            .retryPolicy(WHO.fullMethodName(), RetryPolicy.builder().maxAttempts(3)
                .backoff(Duration.ofMillis(1), Duration.ofMillis(2), 2).retryableCodes(StatusCode.UNAVAILABLE).build())
            .build();
        final AtomicInteger made = new AtomicInteger();
        replicas.get(0).failNext.set(2);

        final StringValue answer = ClientCalls.unary(channel, WHO, CallOptions.DEFAULT.withDeadlineAfter(TIMEOUT),
            Mono.fromCallable(() -> StringValue.of("key-" + made.incrementAndGet()))).block(TIMEOUT);

        assertThat(answer.getValue()).isEqualTo(replicas.get(0).name);
        assertThat(replicas.get(0).requests).containsExactly("key-1", "key-1", "key-1");
        assertThat(made.get()).as("the request's source subscribed once").isOne();
    }

    @Test
    void shouldStopRetryingOnceTheRetryBudgetIsSpent()
    {
        final List<String> uris = start(1);
        final Replica replica = replicas.get(0);
        channel = (BalancedChannel) RpcChannel.builder(uris)
            .retryPolicy(SERVICE, RetryPolicy.builder().maxAttempts(5)
                .backoff(Duration.ofMillis(1), Duration.ofMillis(1), 1).retryableCodes(StatusCode.UNAVAILABLE).build())
            .retryThrottling(10, 0.1)
            .build();
        replica.failNext.set(Integer.MAX_VALUE);

        int failed = 0;
        for (int i = 0; i < 10; i++)
        {
            try
            {
                call();
            }
            catch (final RpcException e)
            {
                failed++;
            }
        }

        assertThat(failed).isEqualTo(10);
        // the first call spends 5 tokens in 5 attempts (10 -> 5); from then on no retries: 1 attempt per call
        assertThat(replica.calls.get()).isEqualTo(5 + 9);
    }

    @Test
    void shouldRefillTheRetryBudgetWithEverySuccessfulUnaryCall()
    {
        final List<String> uris = start(1);
        final Replica replica = replicas.get(0);
        channel = (BalancedChannel) RpcChannel.builder(uris)
            .retryPolicy(SERVICE, RetryPolicy.builder().maxAttempts(2)
                .backoff(Duration.ofMillis(1), Duration.ofMillis(1), 1).retryableCodes(StatusCode.UNAVAILABLE).build())
            .retryThrottling(10, 1.0)
            .build();
        replica.failNext.set(4);
        for (int i = 0; i < 2; i++)
        {
            assertThatThrownBy(this::call).isInstanceOf(RpcException.class);
        }
        assertThat(replica.calls.get()).isEqualTo(4); // 10 -> 6 tokens: one more failure and retries stop

        calls(4); // each success gives a token back: 10 again

        replica.failNext.set(2);
        assertThatThrownBy(this::call).isInstanceOf(RpcException.class);
        assertThat(replica.calls.get()).as("retried again: the budget was refilled").isEqualTo(4 + 4 + 2);
    }

    @Test
    void shouldMoveCallsOnAResolverUpdateWithoutFailingTheCallInFlight()
    {
        final List<String> uris = start(2);
        final Replica a = replicas.get(0);
        final Replica b = replicas.get(1);
        final NameResolver.Listener[] listener = new NameResolver.Listener[1];
        final NameResolver resolver = resolverStartingWith(uris.get(0), listener);
        channel = new BalancedChannel(RpcChannel.builder("test:").loadBalancingPolicy("round_robin"), resolver);
        assertThat(calls(5)).containsOnlyKeys(a.name);
        a.gate = Sinks.empty();
        final AtomicInteger done = new AtomicInteger();
        channel.newUnaryCall(WHO, CallOptions.DEFAULT, StringValue.of("hold")).subscribe(v -> done.incrementAndGet());
        Await.until("the held call reached a", TIMEOUT, () -> a.calls.get() == 6);

        listener[0].onAddresses(List.of(URI.create(uris.get(1))));

        assertThat(calls(5)).containsOnlyKeys(b.name);
        assertThat(done.get()).isZero();
        a.gate.tryEmitEmpty();
        Await.until("the held call answered", TIMEOUT, () -> done.get() == 1);
        Await.until("a's subchannel gone", TIMEOUT, () -> channel.subchannels().size() == 1);
    }

    @Test
    void shouldMovePastAnUnreachableFirstAddressWithPickFirstAndHealthChecking()
    {
        // the health watch waits for a connection (wait-for-ready): the subchannel stayed CONNECTING for ever, and
        // pick_first, which moves on at TRANSIENT_FAILURE, never tried the second address
        final List<String> uris = new ArrayList<>();
        uris.add("inproc://" + ReplicaServers.newName("nobody"));
        uris.addAll(start(1));
        channel = (BalancedChannel) RpcChannel.builder(uris).healthCheck("").build();

        assertThat(call()).isEqualTo(replicas.get(0).name);
    }

    @Test
    void shouldFailFastWhenEveryReplicaIsUnreachableWithHealthChecking()
    {
        channel = (BalancedChannel) RpcChannel.builder(List.of("inproc://" + ReplicaServers.newName("nobody"),
            "inproc://" + ReplicaServers.newName("nobody"))).loadBalancingPolicy("round_robin").healthCheck("").build();
        channel.state(true);
        Await.until("TRANSIENT_FAILURE", TIMEOUT, () -> channel.state() == ConnectivityState.TRANSIENT_FAILURE);
        assertThatThrownBy(this::call).isInstanceOfSatisfying(RpcException.class,
            e -> assertThat(e.status().code()).as("not left to its deadline").isEqualTo(StatusCode.UNAVAILABLE));
    }

    @Test
    void shouldNotLeaveWaitForReadyCallsWithAnUnreachableReplica()
    {
        // without health checking a subchannel is READY before it connects: wait-for-ready calls picked for a replica
        // that cannot be reached waited there until their deadline while the others served
        final List<String> uris = new ArrayList<>(start(2));
        uris.add(1, "inproc://" + ReplicaServers.newName("nobody"));
        channel = (BalancedChannel) RpcChannel.builder(uris).loadBalancingPolicy("round_robin").build();
        final List<Mono<StringValue>> calls = new ArrayList<>();
        for (int i = 0; i < 30; i++)
        {
            calls.add(channel.newUnaryCall(WHO, CallOptions.DEFAULT.withWaitForReady().withDeadlineAfter(TIMEOUT),
                StringValue.of("x")));
        }
        final List<StringValue> answers = Flux.merge(calls).collectList().block(TIMEOUT.plusSeconds(5));
        assertThat(answers).as("every call answered, none left to its deadline").hasSize(30);
    }

    @Test
    void shouldForgetSubchannelsOnceTheyAreShutDownAndClosed()
    {
        // a resolver whose answers keep changing: each update shuts the last subchannel down and makes a new one
        final List<String> uris = start(2);
        final NameResolver.Listener[] listener = new NameResolver.Listener[1];
        final NameResolver resolver = resolverStartingWith(uris.get(0), listener);
        channel = new BalancedChannel(RpcChannel.builder("test:").loadBalancingPolicy("round_robin"), resolver);
        for (int i = 1; i <= 200; i++)
        {
            listener[0].onAddresses(List.of(URI.create(uris.get(i % 2))));
            assertThat(call()).as("served throughout").isNotEmpty();
        }
        Await.until("only the live subchannel held", TIMEOUT, () -> channel.subchannelsHeld() == 1);
    }

    @Test
    void shouldFailFastNamingTheErrorWhenNoReplicaCanBeReached()
    {
        channel = (BalancedChannel) RpcChannel.builder(List.of("inproc://" + ReplicaServers.newName("nobody"))).build();
        Await.until("failure", TIMEOUT, () -> channel.state() == ConnectivityState.TRANSIENT_FAILURE
            || tryCallFails());
        assertThatThrownBy(this::call).isInstanceOfSatisfying(RpcException.class,
            e -> assertThat(e.status().code()).isEqualTo(StatusCode.UNAVAILABLE));
    }

    private boolean tryCallFails()
    {
        try
        {
            call();
            return false;
        }
        catch (final RpcException e)
        {
            return true;
        }
    }
}
