package io.reverb.rdma.rpc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.protobuf.StringValue;
import io.reverb.rdma.engine.EngineConfig;
import io.reverb.rdma.engine.RdmaEngine;
import io.reverb.rpc.CallOptions;
import io.reverb.rpc.RpcChannel;
import io.reverb.rpc.RpcException;
import io.reverb.rpc.RpcServer;
import io.reverb.rpc.StatusCode;
import io.reverb.rpc.TestService;
import io.reverb.rpc.transport.TransportOptions;
import java.time.Duration;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Issue 13, item 3, through the RPC layer: the server's {@code maxInboundMessageSize} reaches its engine connections
 * (which refuse larger messages before reserving memory), and a request the server's rendezvous memory
 * budget can never hold fails with RESOURCE_EXHAUSTED while the channel stays usable.
 */
class RendezvousBudgetRpcTest
{
    private static final Duration WAIT = Duration.ofSeconds(30);
    private static final int MIB = 1 << 20;

    private static String listenAddress(final String scheme)
    {
        return "shm".equals(scheme) ? "shm://budget-" + ProcessHandle.current().pid() + "-" + System.nanoTime() :
            "tcp://127.0.0.1:0";
    }

    private static StringValue text(final int length)
    {
        return StringValue.of("x".repeat(length));
    }

    @ParameterizedTest
    @ValueSource(strings = {"shm", "tcp"})
    void shouldFailARequestOverTheServersBudgetWithResourceExhaustedAndKeepTheChannel(final String scheme)
    {
        final EngineConfig serverConfig = new EngineConfig().name("budget-server-" + scheme).rendezvousMemoryBytes(MIB);
        final RpcServer server = RpcServer.builder(listenAddress(scheme)).maxInboundMessageSize(8 * MIB)
            .transportOptions(EngineOptions.of(serverConfig)).addService(new TestService()).build().start();
        final RpcChannel channel = RpcChannel.builder(server.address()).maxInboundMessageSize(8 * MIB).build();
        try
        {
            // 3 MB fits the RPC limits of both sides, but its 4 MiB buffer never fits the server's 1 MiB budget.
            assertThatThrownBy(() -> channel.newUnaryCall(TestService.ECHO, CallOptions.DEFAULT, text(3_000_000))
                .block(WAIT))
                .isInstanceOfSatisfying(RpcException.class, e ->
                {
                    assertThat(e.status().code()).isEqualTo(StatusCode.RESOURCE_EXHAUSTED);
                    assertThat(e.status().description()).contains("rendezvous memory budget of " + MIB + " bytes");
                });
            // The same channel still serves, large messages that fit the budget included.
            assertThat(channel.newUnaryCall(TestService.ECHO, CallOptions.DEFAULT, StringValue.of("small")).block(WAIT))
                .isEqualTo(StringValue.of("small"));
            assertThat(channel.newUnaryCall(TestService.ECHO, CallOptions.DEFAULT, text(400_000)).block(WAIT))
                .isEqualTo(text(400_000));
        }
        finally
        {
            channel.close();
            server.close();
        }
        EngineTransportTestHooks.awaitEngineClosed(server.address(), EngineOptions.of(serverConfig), null);
    }

    @ParameterizedTest
    @ValueSource(strings = {"shm", "tcp"})
    void shouldRefuseAMessageOverTheRpcLimitBeforeTheServerReservesAnything(final String scheme) throws Exception
    {
        final EngineConfig serverConfig = new EngineConfig().name("limit-server-" + scheme);
        final TransportOptions options = EngineOptions.of(serverConfig);
        final RpcServer server = RpcServer.builder(listenAddress(scheme)).maxInboundMessageSize(MIB)
            .transportOptions(options).addService(new TestService()).build().start();
        final RpcChannel channel = RpcChannel.builder(server.address()).build();
        try
        {
            final RdmaEngine serverEngine = EngineTransportTestHooks.sharedEngine(server.address(), options);
            // The engine's own limit stays (64 MiB: engines are shared); each connection of this server takes the
            // RPC limit, plus the headroom for frame headers and metadata.
            assertThat(serverEngine.config().maxInboundMessageSize()).isEqualTo(64 * MIB);
            assertThatThrownBy(() -> channel.newUnaryCall(TestService.ECHO, CallOptions.DEFAULT, text(2 * MIB))
                .block(WAIT))
                .isInstanceOfSatisfying(RpcException.class, e ->
                {
                    assertThat(e.status().code()).isEqualTo(StatusCode.RESOURCE_EXHAUSTED);
                    assertThat(e.status().description())
                        .contains("larger than its maxInboundMessageSize of " + (MIB + EngineTransport.RPC_FRAMING_HEADROOM));
                });
            assertThat(serverEngine.connections()).hasSize(1);
            assertThat(serverEngine.stats().rendezvousRefused()).isEqualTo(1);
            assertThat(serverEngine.rendezvousMemoryPeak()).as("nothing reserved for the refused message").isZero();
            assertThat(channel.newUnaryCall(TestService.ECHO, CallOptions.DEFAULT, text(MIB / 2)).block(WAIT))
                .isEqualTo(text(MIB / 2));
        }
        finally
        {
            channel.close();
            server.close();
        }
        EngineTransportTestHooks.awaitEngineClosed(server.address(), EngineOptions.of(serverConfig), null);
    }
}
