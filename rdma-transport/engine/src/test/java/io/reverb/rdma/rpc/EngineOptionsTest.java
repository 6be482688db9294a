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
import io.reverb.rpc.transport.Transports;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Engine settings per builder: {@link EngineOptions}, with the address's query overriding single fields only. */
class EngineOptionsTest
{
    private static final Duration WAIT = Duration.ofSeconds(30);

    private static EngineTransport shm()
    {
        return ((EngineTransportProvider)Transports.providerFor(URI.create("shm://x"))).transport();
    }

    @Test
    void shouldGiveSharedEnginesTheMarshallersIdleTaskUnlessTheConfigHasOne() throws Exception
    {
        final EngineConfig plain = new EngineConfig().name("idle-default-test");
        final BooleanSupplier own = () -> false;
        final EngineConfig withOwn = new EngineConfig().name("idle-own-test").idleTask(own);
        final SharedEngines.Lease defaulted = shm().acquire(URI.create("shm://x"), EngineOptions.of(plain));
        final SharedEngines.Lease kept = shm().acquire(URI.create("shm://x"), EngineOptions.of(withOwn));
        try
        {
            // the default marshaller's arrays for large messages, prepared while the pollers wait
            assertThat(defaulted.engine().config().idleTask()).isNotNull();
            assertThat(defaulted.engine().config().idleTask().getAsBoolean()).as("nothing to prepare on this thread")
                .isFalse();
            assertThat(kept.engine().config().idleTask()).isSameAs(own);
            assertThat(plain.idleTask()).as("the caller's config is not changed").isNull();
        }
        finally
        {
            defaulted.release();
            kept.release();
        }
        EngineTransportTestHooks.awaitEngineClosed("shm://x", EngineOptions.of(plain), defaulted.engine());
        EngineTransportTestHooks.awaitEngineClosed("shm://x", EngineOptions.of(withOwn), kept.engine());
    }

    @Test
    void shouldKeepEveryOtherSettingWhenTheAddressOverridesThePollingModeAndCloseTheEngineWithItsLastUser()
        throws Exception
    {
        final EngineConfig config = new EngineConfig().name("options-test").authToken("s3cret").receiveSlots(32)
            .maxConnections(7).maxUnprovenPerPeer(2);
        final SharedEngines.Lease lease = shm().acquire(URI.create("shm://x?polling=event"), EngineOptions.of(config));
        final SharedEngines.Lease same = shm().acquire(URI.create("shm://y?polling=event"), EngineOptions.of(config));
        final SharedEngines.Lease other = shm().acquire(URI.create("shm://x"), TransportOptions.EMPTY);
        final RdmaEngine engine = lease.engine();
        try
        {
            assertThat(engine.config().pollingMode()).isEqualTo(PollingMode.EVENT);
            assertThat(engine.config().authToken()).isEqualTo("s3cret".getBytes(StandardCharsets.UTF_8));
            assertThat(engine.config().receiveSlots()).isEqualTo(32);
            // the limits reach the server's engine (a copy once dropped maxConnections: it was 4,096 whatever was set)
            assertThat(engine.config().maxConnections()).isEqualTo(7);
            assertThat(engine.config().maxUnprovenPerPeer()).isEqualTo(2);
            // the same settings share the engine; the caller's config stays unconcluded (a copy was opened)
            assertThat(same.engine()).isSameAs(engine);
            assertThat(config.isConcluded()).isFalse();
            assertThat(other.engine()).isNotSameAs(engine);
        }
        finally
        {
            lease.release();
            other.release();
        }
        lease.release(); // a lease counts once
        assertThat(engine.isClosed()).as("one user left").isFalse();
        assertThat(EngineTransportTestHooks.sharedEngine("shm://x?polling=event", EngineOptions.of(config)))
            .isSameAs(engine);
        same.release();
        EngineTransportTestHooks.awaitEngineClosed("shm://x?polling=event", EngineOptions.of(config), engine);
        // a new user of the same settings gets a new engine
        final SharedEngines.Lease again = shm().acquire(URI.create("shm://x?polling=event"), EngineOptions.of(config));
        try
        {
            assertThat(again.engine()).isNotSameAs(engine);
            assertThat(again.engine().isClosed()).isFalse();
        }
        finally
        {
            again.release();
        }
        EngineTransportTestHooks.awaitEngineClosed("shm://x?polling=event", EngineOptions.of(config), again.engine());
    }

    @Test
    void shouldGiveTwoChannelsOfOneJvmTheEngineSettingsOfTheirOwnBuilders()
    {
        final EngineConfig serverConfig = new EngineConfig().name("two-server");
        final EngineConfig eventConfig = new EngineConfig().name("two-event").pollingMode(PollingMode.EVENT)
            .receiveSlots(16);
        final EngineConfig adaptiveConfig = new EngineConfig().name("two-adaptive").receiveSlots(64);
        final RpcServer server = RpcServer.builder("tcp://127.0.0.1:0").transportOptions(EngineOptions.of(serverConfig))
            .addService(new TestService()).build().start();
        final RpcChannel event = RpcChannel.builder(server.address()).transportOptions(EngineOptions.of(eventConfig))
            .build();
        final RpcChannel adaptive = RpcChannel.builder(server.address())
            .transportOptions(EngineOptions.of(adaptiveConfig)).build();
        final RdmaEngine eventEngine;
        final RdmaEngine adaptiveEngine;
        try
        {
            assertThat(event.newUnaryCall(TestService.ECHO, CallOptions.DEFAULT, StringValue.of("e")).block(WAIT))
                .isEqualTo(StringValue.of("e"));
            assertThat(adaptive.newUnaryCall(TestService.ECHO, CallOptions.DEFAULT, StringValue.of("a")).block(WAIT))
                .isEqualTo(StringValue.of("a"));
            eventEngine = EngineTransportTestHooks.sharedEngine(server.address(), EngineOptions.of(eventConfig));
            adaptiveEngine = EngineTransportTestHooks.sharedEngine(server.address(), EngineOptions.of(adaptiveConfig));
            assertThat(eventEngine).isNotSameAs(adaptiveEngine);
            assertThat(eventEngine.config().pollingMode()).isEqualTo(PollingMode.EVENT);
            assertThat(eventEngine.config().receiveSlots()).isEqualTo(16);
            assertThat(adaptiveEngine.config().pollingMode()).isEqualTo(PollingMode.ADAPTIVE);
            assertThat(adaptiveEngine.config().receiveSlots()).isEqualTo(64);
            assertThat(eventEngine.stats().eagerMessagesSent()).isPositive();
            assertThat(adaptiveEngine.stats().eagerMessagesSent()).isPositive();
        }
        finally
        {
            event.close();
        }
        // one channel closed: its engine with it; the other channel's engine serves on
        EngineTransportTestHooks.awaitEngineClosed(server.address(), EngineOptions.of(eventConfig), eventEngine);
        try
        {
            assertThat(adaptiveEngine.isClosed()).isFalse();
            assertThat(adaptive.newUnaryCall(TestService.ECHO, CallOptions.DEFAULT, StringValue.of("b")).block(WAIT))
                .isEqualTo(StringValue.of("b"));
        }
        finally
        {
            adaptive.close();
            server.close();
        }
        EngineTransportTestHooks.awaitEngineClosed(server.address(), EngineOptions.of(adaptiveConfig), adaptiveEngine);
        EngineTransportTestHooks.awaitEngineClosed(server.address(), EngineOptions.of(serverConfig), null);
    }

    @Test
    void shouldServeOverTheCallersOwnEngineAndNeverCloseIt() throws Exception
    {
        final String address = "shm://own-engine-" + ProcessHandle.current().pid();
        try (RdmaEngine engine = RdmaEngine.open("shm", new EngineConfig().name("own-engine")))
        {
            final RpcServer server = RpcServer.builder(address).transportOptions(EngineOptions.of(engine))
                .addService(new TestService()).build().start();
            final RpcChannel channel = RpcChannel.builder(address).transportOptions(EngineOptions.of(engine)).build();
            try
            {
                assertThat(channel.newUnaryCall(TestService.ECHO, CallOptions.DEFAULT, StringValue.of("own"))
                    .block(WAIT)).isEqualTo(StringValue.of("own"));
                // both ends on the caller's engine: its counters are the caller's to read, no reflection needed
                assertThat(engine.stats().eagerMessagesSent()).isGreaterThanOrEqualTo(2);
                assertThat(EngineTransportTestHooks.sharedEngine(address, EngineOptions.of(engine)))
                    .as("not a shared engine").isNull();
            }
            finally
            {
                channel.close();
                server.close();
            }
            assertThat(engine.isClosed()).as("the transport never closes the caller's engine").isFalse();

            final EngineTransport shm = shm();
            assertThatThrownBy(() -> shm.acquire(URI.create(address + "?polling=busy"), EngineOptions.of(engine)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("BUSY polling")
                .hasMessageContaining("ADAPTIVE");
            assertThat(shm.acquire(URI.create(address + "?polling=adaptive"), EngineOptions.of(engine)).engine())
                .as("an override that agrees with the engine").isSameAs(engine);
            assertThatThrownBy(() -> shm.acquire(URI.create(address), EngineOptions.of(engine)
                .with(EngineOptions.ENGINE_CONFIG, new EngineConfig()))).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("not both");
            final EngineTransport tcp =
                ((EngineTransportProvider)Transports.providerFor(URI.create("tcp://127.0.0.1:1"))).transport();
            assertThatThrownBy(() -> tcp.acquire(URI.create("tcp://127.0.0.1:1"), EngineOptions.of(engine)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("runs shm://");
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
        }
        EngineTransportTestHooks.awaitEngineClosed(server.address() + "?polling=event", EngineOptions.of(serverConfig), null);
        EngineTransportTestHooks.awaitEngineClosed(server.address() + "?polling=event", EngineOptions.of(clientConfig), null);
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
        }
        for (final EngineConfig config : new EngineConfig[] {serverConfig, wrongConfig, noneConfig, rightConfig})
        {
            EngineTransportTestHooks.awaitEngineClosed(server.address(), EngineOptions.of(config), null);
        }
    }
}
