package io.reverb.rpc.internal;

import io.reverb.rpc.RpcServer;
import io.reverb.rpc.TestService;
import io.reverb.rpc.transport.TransportOptions;
import java.time.Duration;
import java.util.List;
import reactor.core.scheduler.Schedulers;

/**
 * The channel and server runtimes that call-path tests drive by hand over {@link RecordingConnection}s: defaults of
 * the builders, no transport behind them.
 */
final class TestRuntimes
{
    private TestRuntimes()
    {
    }

    /**
     * @return a connection with the builder's defaults (keep-alive off, parallel scheduler): the owner of the client
     * connections a test attaches by hand.
     */
    static ClientTransportImpl channel()
    {
        return new ClientTransportImpl(new ChannelConfig("inproc://unused", List.of(), null,
            RpcServer.DEFAULT_MAX_INBOUND_MESSAGE_SIZE, null, Duration.ofSeconds(30), Duration.ofSeconds(10),
            Duration.ofMillis(100), Duration.ofSeconds(30), Schedulers.parallel(), TransportOptions.EMPTY));
    }

    /**
     * @param service what the server serves.
     * @return a server runtime with the builder's defaults.
     */
    static ServerRuntime server(final TestService service)
    {
        return new ServerRuntime(new ServerConfig("inproc://unused", List.of(service.bindService()), List.of(), null,
            Schedulers.parallel(), RpcServer.DEFAULT_MAX_INBOUND_MESSAGE_SIZE, null, Duration.ZERO,
            TransportOptions.EMPTY));
    }
}
