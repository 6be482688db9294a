package io.reverb.rpc.internal;

import static org.assertj.core.api.Assertions.assertThat;

import io.reverb.rpc.RpcServer;
import io.reverb.rpc.transport.Connection;
import io.reverb.rpc.transport.ConnectionHandler;
import io.reverb.rpc.transport.ResourceUsage;
import io.reverb.rpc.transport.ServerListener;
import io.reverb.rpc.transport.TransportProvider;
import java.net.URI;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * A connection accepted while the server shuts down: the shutdown begins after the acceptor checked for it and
 * before the connection joined the server's set, so the shutdown's GOAWAY loop and grace timer cannot see it. It
 * must be refused, not kept open with nobody to close it. Deterministic: the fake transport connection starts the
 * shutdown from inside the server connection's construction, exactly in that window.
 */
class ShutdownDuringAcceptTest
{
    @Test
    void shouldRefuseAConnectionWhoseAcceptRacedWithShutdown() throws Exception
    {
        final FakeProvider provider = new FakeProvider();
        final ServerRuntime runtime = new ServerRuntime(
            ServerConfig.of(RpcServer.builder("fake://server")), List.of(), provider);
        runtime.start();
        final RecordingConnection connection = new RecordingConnection()
        {
            @Override
            public boolean signalsReadComplete()
            {
                runtime.shutdown(Duration.ZERO); // read by the ServerWireConnection constructor: inside the window
                return false;
            }
        };

        final ConnectionHandler handler = provider.acceptor.onConnection(connection);

        assertThat(handler).as("refused: the transport closes it").isNull();
        assertThat(runtime.isShutdown()).isTrue();
        assertThat(runtime.awaitTermination(10, TimeUnit.SECONDS)).as("terminated, no connection left").isTrue();
        assertThat(provider.listenerClosed).isTrue();
    }

    @Test
    void shouldAcceptAConnectionBeforeShutdownAndDrainItAfter() throws Exception
    {
        final FakeProvider provider = new FakeProvider();
        final ServerRuntime runtime = new ServerRuntime(
            ServerConfig.of(RpcServer.builder("fake://server")), List.of(), provider);
        runtime.start();

        final RecordingConnection connection = new RecordingConnection();
        final ConnectionHandler handler = provider.acceptor.onConnection(connection);

        assertThat(handler).isNotNull();
        runtime.shutdown(Duration.ofDays(1));
        assertThat(runtime.isTerminated()).as("the accepted connection is still open, draining").isFalse();
        handler.onClose(connection, null);
        assertThat(runtime.awaitTermination(10, TimeUnit.SECONDS)).isTrue();
    }

    /** Hands the acceptor to the test instead of listening anywhere. */
    private static final class FakeProvider implements TransportProvider
    {
        ServerListener.Acceptor acceptor;
        volatile boolean listenerClosed;

        @Override
        public String scheme()
        {
            return "fake";
        }

        @Override
        public boolean isAvailable()
        {
            return true;
        }

        @Override
        public String unavailabilityCause()
        {
            return null;
        }

        @Override
        public CompletableFuture<Connection> connect(final URI uri, final ConnectionHandler handler)
        {
            return CompletableFuture.failedFuture(new UnsupportedOperationException("server side only"));
        }

        @Override
        public ResourceUsage resourceUsage()
        {
            return ResourceUsage.NONE;
        }

        @Override
        public ServerListener listen(final URI uri, final ServerListener.Acceptor acceptor)
        {
            this.acceptor = acceptor;
            return new ServerListener()
            {
                @Override
                public String address()
                {
                    return "fake://server";
                }

                @Override
                public int port()
                {
                    return -1;
                }

                @Override
                public void close()
                {
                    listenerClosed = true;
                }
            };
        }
    }
}
