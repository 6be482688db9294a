package io.reverb.rdma.rpc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.protobuf.StringValue;
import io.reverb.rdma.engine.EngineConfig;
import io.reverb.rdma.engine.PollingMode;
import io.reverb.rdma.engine.RdmaEngine;
import io.reverb.rpc.CallOptions;
import io.reverb.rpc.RpcChannel;
import io.reverb.rpc.RpcException;
import io.reverb.rpc.RpcServer;
import io.reverb.rpc.StatusCode;
import io.reverb.rpc.TestService;
import io.reverb.rpc.transport.TransportOptions;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Engine settings per builder: {@link EngineOptions}, with the address's query overriding single fields only. */
class EngineOptionsTest
{
    private static final Duration WAIT = Duration.ofSeconds(30);

    @Test
    void shouldKeepEveryOtherSettingWhenTheAddressOverridesThePollingMode() throws Exception
    {
        final EngineConfig config = new EngineConfig().name("options-test").authToken("s3cret").receiveSlots(32);
        try
        {
            final RdmaEngine engine = ShmTransportProvider.TRANSPORT.engineFor(
                URI.create("shm://x?polling=event"), EngineOptions.of(config));
            assertThat(engine.config().pollingMode()).isEqualTo(PollingMode.EVENT);
            assertThat(engine.config().authToken()).isEqualTo("s3cret".getBytes(StandardCharsets.UTF_8));
            assertThat(engine.config().receiveSlots()).isEqualTo(32);
            // the same settings share the engine; the caller's config stays unconcluded (a copy was opened)
            assertThat(ShmTransportProvider.TRANSPORT.engineFor(URI.create("shm://y?polling=event"), EngineOptions.of(config)))
                .isSameAs(engine);
            assertThat(config.isConcluded()).isFalse();
            assertThat(ShmTransportProvider.TRANSPORT.engineFor(URI.create("shm://x"), TransportOptions.EMPTY))
                .isNotSameAs(engine);
        }
        finally
        {
            EngineTransportTestHooks.closeEngine("shm", config, PollingMode.EVENT);
        }
    }

    @Test
    void shouldRefuseAClientWithoutTheTokenOfAServerWhoseAddressSetsThePollingMode()
    {
        final EngineConfig serverConfig = new EngineConfig().name("options-server").authToken("s3cret");
        final EngineConfig clientConfig = new EngineConfig().name("options-client").authToken("s3cret");
        final RpcServer server = RpcServer.builder("tcp://127.0.0.1:0?polling=event")
            .transportOptions(EngineOptions.of(serverConfig))
            .addService(new TestService())
            .build()
            .start();
        final RpcChannel withoutToken = RpcChannel.builder(server.address())
            .reconnectBackoff(Duration.ofMillis(10), Duration.ofMillis(100)).build();
        final RpcChannel withToken = RpcChannel.builder(server.address() + "?polling=event")
            .transportOptions(EngineOptions.of(clientConfig)).build();
        try
        {
            assertThatThrownBy(() -> withoutToken.newUnaryCall(TestService.ECHO, CallOptions.DEFAULT,
                StringValue.of("no token")).block(WAIT))
                .isInstanceOfSatisfying(RpcException.class,
                    e -> assertThat(e.status().code()).isEqualTo(StatusCode.UNAUTHENTICATED));
            assertThat(withToken.newUnaryCall(TestService.ECHO, CallOptions.DEFAULT, StringValue.of("token"))
                .block(WAIT)).isEqualTo(StringValue.of("token"));
        }
        finally
        {
            withoutToken.close();
            withToken.close();
            server.close();
            EngineTransportTestHooks.closeEngine("tcp", serverConfig, PollingMode.EVENT);
            EngineTransportTestHooks.closeEngine("tcp", clientConfig, PollingMode.EVENT);
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"shm", "tcp"})
    void shouldFailCallsUnauthenticatedWithoutRetryingWhenTheTokenIsMissingOrWrong(final String scheme)
    {
        final EngineConfig serverConfig = new EngineConfig().name("auth-server-" + scheme).authToken("s3cret");
        final EngineConfig wrongConfig = new EngineConfig().name("auth-wrong-" + scheme).authToken("guess");
        final EngineConfig noneConfig = new EngineConfig().name("auth-none-" + scheme);
        final EngineConfig rightConfig = new EngineConfig().name("auth-right-" + scheme).authToken("s3cret");
        final RpcServer server = RpcServer.builder("shm".equals(scheme) ? "shm://auth-status-test" : "tcp://127.0.0.1:0")
            .transportOptions(EngineOptions.of(serverConfig))
            .addService(new TestService())
            .build()
            .start();
        final RpcChannel wrong = RpcChannel.builder(server.address()).transportOptions(EngineOptions.of(wrongConfig))
            .reconnectBackoff(Duration.ofMillis(10), Duration.ofMillis(100)).build();
        final RpcChannel none = RpcChannel.builder(server.address()).transportOptions(EngineOptions.of(noneConfig))
            .reconnectBackoff(Duration.ofMillis(10), Duration.ofMillis(100)).build();
        final RpcChannel right = RpcChannel.builder(server.address()).transportOptions(EngineOptions.of(rightConfig))
            .build();
        // several addresses: the load-balanced channel reports the replica's refusal as is
        final RpcChannel balanced = RpcChannel.builder(List.of(server.address(), server.address()))
            .transportOptions(EngineOptions.of(wrongConfig)).reconnectBackoff(Duration.ofMillis(10), Duration.ofMillis(100))
            .build();
        try
        {
            for (final RpcChannel refused : new RpcChannel[] {wrong, none, balanced})
            {
                // a wait-for-ready call too: a refused credential is no transient failure to wait out
                for (final CallOptions options : new CallOptions[] {CallOptions.DEFAULT, CallOptions.DEFAULT.withWaitForReady()})
                {
                    assertThatThrownBy(() -> refused.newUnaryCall(TestService.ECHO, options,
                        StringValue.of("refused")).block(WAIT))
                        .isInstanceOfSatisfying(RpcException.class, e ->
                        {
                            assertThat(e.status().code()).as(e.getMessage()).isEqualTo(StatusCode.UNAUTHENTICATED);
                            assertThat(e.status().description()).contains("authToken");
                        });
                }
            }
            assertThat(right.newUnaryCall(TestService.ECHO, CallOptions.DEFAULT, StringValue.of("admitted"))
                .block(WAIT)).isEqualTo(StringValue.of("admitted"));
        }
        finally
        {
            wrong.close();
            none.close();
            right.close();
            balanced.close();
            server.close();
            for (final EngineConfig config : new EngineConfig[] {serverConfig, wrongConfig, noneConfig, rightConfig})
            {
                EngineTransportTestHooks.closeEngine(scheme, config, null);
            }
        }
    }
}
