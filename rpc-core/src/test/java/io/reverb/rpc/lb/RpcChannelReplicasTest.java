package io.reverb.rpc.lb;

import io.reverb.rpc.ConnectivityState;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.protobuf.StringValue;
import io.reverb.rpc.CallOptions;
import io.reverb.rpc.MethodDescriptor;
import io.reverb.rpc.RpcChannel;
import io.reverb.rpc.RpcServer;
import io.reverb.rpc.ServiceDefinition;
import io.reverb.rpc.stub.ClientCalls;
import io.reverb.rpc.stub.ServerCalls;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Mono;

/**
 * {@link RpcChannel} built with several addresses: the stubs' entry point balances over the replicas.
 */
class RpcChannelReplicasTest
{
    private static final Duration TIMEOUT = ReplicaServers.TIMEOUT;
    private static final MethodDescriptor<StringValue, StringValue> WHO = ReplicaServers.unaryMethod("reverb.test.Who", "Who");

    private final ReplicaServers servers = new ReplicaServers();
    private RpcChannel channel;

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
            final String uri = "inproc://" + ReplicaServers.newName("replicas");
            servers.start(RpcServer.builder(uri).addService(ServiceDefinition.builder("reverb.test.Who")
                .addMethod(WHO, ServerCalls.unary(r -> Mono.just(StringValue.of(uri)))).build()));
            uris.add(uri);
        }
        return uris;
    }

    @Test
    void shouldBalanceStubCallsOverEveryAddress()
    {
        final List<String> uris = start(3);
        channel = RpcChannel.builder(uris).loadBalancingPolicy("round_robin").healthCheck("").build();
        assertThat(channel.uri()).isEqualTo(String.join(",", uris));
        final long end = System.nanoTime() + TIMEOUT.toNanos();
        while (((BalancedChannel)channel).subchannels().stream().filter(s -> s.state() == ConnectivityState.READY).count() < 3)
        {
            assertThat(System.nanoTime() - end).isNegative();
            Thread.onSpinWait();
        }
        // the picker is published just after the states change: wait until calls reach all three
        final Set<String> seen = new HashSet<>();
        while (seen.size() < 3)
        {
            assertThat(System.nanoTime() - end).isNegative();
            seen.add(ClientCalls.unary(channel, WHO, CallOptions.DEFAULT, StringValue.of("x")).block(TIMEOUT).getValue());
        }

        final Map<String, Integer> counts = new HashMap<>();
        for (int i = 0; i < 30; i++)
        {
            counts.merge(ClientCalls.unary(channel, WHO, CallOptions.DEFAULT, StringValue.of("x")).block(TIMEOUT).getValue(),
                1, Integer::sum);
        }
        assertThat(counts).containsOnlyKeys(uris);
        assertThat(counts.values()).containsOnly(10);
    }

    @Test
    void shouldRunPickFirstOverTheOneSubchannelOfOneAddress()
    {
        final List<String> uris = start(1);
        channel = RpcChannel.builder(uris.get(0)).build();
        assertThat(ClientCalls.unary(channel, WHO, CallOptions.DEFAULT, StringValue.of("x")).block(TIMEOUT).getValue())
            .isEqualTo(uris.get(0));
        // the one implementation, its balancer on: one subchannel, for the one address, picked
        assertThat(channel).isInstanceOf(BalancedChannel.class);
        final BalancedChannel balanced = (BalancedChannel)channel;
        assertThat(balanced.subchannels()).hasSize(1);
        assertThat(balanced.subchannels().get(0).address().toString()).isEqualTo(uris.get(0));
        assertThat(balanced.state()).isEqualTo(ConnectivityState.READY);
    }

    @Test
    void shouldRejectAnUnknownPolicyNamingTheKnownOnes()
    {
        assertThatThrownBy(() -> RpcChannel.builder(List.of("inproc://a", "inproc://b")).loadBalancingPolicy("random").build())
            .isInstanceOf(IllegalArgumentException.class)
            .hasMessageContaining("random").hasMessageContaining("round_robin").hasMessageContaining("peak_ewma");
    }
}
