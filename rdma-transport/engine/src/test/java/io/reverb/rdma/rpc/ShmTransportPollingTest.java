package io.reverb.rdma.rpc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.reverb.rdma.engine.PollingMode;
import io.reverb.rdma.engine.RdmaEngine;
import io.reverb.common.ClaimResult;
import io.reverb.rpc.transport.Connection;
import io.reverb.rpc.transport.ConnectionHandler;
import io.reverb.rpc.transport.ServerListener;
import io.reverb.rpc.transport.TransportOptions;
import io.reverb.rpc.transport.Transports;
import io.reverb.common.WriteClaim;
import java.net.URI;
import java.nio.ByteBuffer;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * {@code shm://name?polling=MODE} picks a shared engine of that polling mode, which closes when its last listener or
 * connection does.
 */
class ShmTransportPollingTest
{
    @Test
    void shouldServeEachPollingModeFromItsOwnEngineAndCloseEachWithItsLastUser() throws Exception
    {
        final String name = "polling-" + ProcessHandle.current().pid();
        final ShmTransportProvider provider = (ShmTransportProvider)Transports.providerFor(URI.create("shm://" + name));
        assertThatThrownBy(() -> EngineTransport.pollingMode(URI.create("shm://x?polling=sometimes")))
            .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("polling=busy");

        // An EVENT server echoes to a BUSY client in the same JVM.
        final ServerListener listener = provider.listen(URI.create("shm://" + name + "?polling=event"), connection ->
            new ConnectionHandler()
            {
                final WriteClaim reply = new WriteClaim();

                @Override
                public void onMessage(final Connection c, final ByteBuffer message)
                {
                    if (c.tryClaim(message.remaining(), reply) == ClaimResult.OK)
                    {
                        reply.buffer().put(message);
                        reply.commit();
                    }
                }

                @Override
                public void onWritable(final Connection c)
                {
                }

                @Override
                public void onClose(final Connection c, final Throwable cause)
                {
                }
            });
        final CompletableFuture<Integer> echoed = new CompletableFuture<>();
        final CompletableFuture<Throwable> closed = new CompletableFuture<>();
        final Connection client = provider.connect(URI.create(listener.address() + "?polling=busy"), new ConnectionHandler()
        {
            @Override
            public void onMessage(final Connection c, final ByteBuffer message)
            {
                echoed.complete(message.getInt(message.position()));
            }

            @Override
            public void onWritable(final Connection c)
            {
            }

            @Override
            public void onClose(final Connection c, final Throwable cause)
            {
                closed.complete(cause);
            }
        }).get(20, TimeUnit.SECONDS);
        final RdmaEngine eventEngine = EngineTransportTestHooks.sharedEngine("shm://x?polling=event", TransportOptions.EMPTY);
        final RdmaEngine busyEngine = EngineTransportTestHooks.sharedEngine("shm://x?polling=busy", TransportOptions.EMPTY);
        assertThat(eventEngine.config().pollingMode()).isEqualTo(PollingMode.EVENT);
        assertThat(busyEngine.config().pollingMode()).isEqualTo(PollingMode.BUSY);
        final WriteClaim claim = new WriteClaim();
        assertThat(client.tryClaim(4, claim)).isEqualTo(ClaimResult.OK);
        claim.buffer().putInt(claim.offset(), 4711);
        assertThat(claim.commit()).isEqualTo(ClaimResult.OK);
        assertThat(echoed.get(20, TimeUnit.SECONDS)).isEqualTo(4711);
        client.close();
        assertThat(closed.get(20, TimeUnit.SECONDS)).isNull();
        // the BUSY engine's only user is gone: it stops (it would spin a core for the rest of the run otherwise)
        EngineTransportTestHooks.awaitEngineClosed("shm://x?polling=busy", TransportOptions.EMPTY, busyEngine);
        assertThat(eventEngine.isClosed()).as("the listener still holds the EVENT engine").isFalse();
        listener.close();
        EngineTransportTestHooks.awaitEngineClosed("shm://x?polling=event", TransportOptions.EMPTY, eventEngine);
    }
}
