package io.reverb.rdma.engine;

import static io.reverb.rdma.engine.EngineTestSupport.claimed;
import static io.reverb.rdma.engine.EngineTestSupport.config;
import static org.assertj.core.api.Assertions.assertThat;

import io.reverb.common.WriteClaim;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * A listener that refuses a connection by closing it in its accept callback, without ever setting a handler, while
 * the client's first messages are on their way. Before the fix the callback's {@code close()} waited the whole close
 * timeout (10 s by default) holding the accept loop (polling starts only after the callback returns), and then the
 * client's messages, held for a handler that never came, kept the server's poller from reading the client's answer to
 * the CLOSE until the timeout ended the close. The servers here have a ten-minute close timeout, and the waits are a
 * minute: a close that waits for the timeout fails them.
 */
class CloseBeforeHandlerTest
{
    private static final long WAIT_SECONDS = 60;

    @ParameterizedTest
    @EnumSource(EngineFabric.Local.class)
    void shouldCloseAConnectionRefusedInTheAcceptCallbackWithoutWaitingForTheCloseTimeout(final EngineFabric fabric)
        throws Exception
    {
        final EngineConfig serverConfig = config(fabric, PollingMode.ADAPTIVE).name("refusing-server")
            .closeTimeoutNanos(TimeUnit.MINUTES.toNanos(10));
        final CountDownLatch clientSent = new CountDownLatch(1);
        final CompletableFuture<Throwable> serverSideClosed = new CompletableFuture<>();
        final AtomicReference<Connection> refused = new AtomicReference<>();
        final CompletableFuture<Long> callbackNanos = new CompletableFuture<>();
        try (RdmaEngine server = RdmaEngine.open(fabric.scheme(), serverConfig);
            RdmaEngine client = RdmaEngine.open(fabric.scheme(), config(fabric, PollingMode.ADAPTIVE).name("client"));
            EngineListener listener = server.listen(fabric.listenAddress("refusing"), connection ->
            {
                if (!refused.compareAndSet(null, connection))
                {
                    connection.close();
                    return;
                }
                connection.onClose(serverSideClosed::complete);
                try
                {
                    // the client's messages are committed before the refusal (they arrive once polling starts)
                    clientSent.await(WAIT_SECONDS, TimeUnit.SECONDS);
                }
                catch (final InterruptedException ex)
                {
                    Thread.currentThread().interrupt();
                }
                final long start = System.nanoTime();
                connection.close(); // synchronous, in the accept callback
                callbackNanos.complete(System.nanoTime() - start);
            }))
        {
            final Connection connection = client.connect(listener.address());
            final CompletableFuture<Throwable> clientSideClosed = new CompletableFuture<>();
            connection.onClose(clientSideClosed::complete);
            connection.setHandler((buffer, offset, length) ->
            {
            });
            final WriteClaim claim = new WriteClaim();
            int sent = 0;
            for (int i = 0; i < 3; i++)
            {
                if (connection.tryClaim(8, claim) == Connection.OK)
                {
                    claimed(claim).putLong(claim.offset(), i);
                    claim.commit();
                    sent++;
                }
            }
            assertThat(sent).as("the client's messages were committed").isPositive();
            clientSent.countDown();
            // close() in the callback returns without waiting for a close that cannot progress before it returns
            assertThat(callbackNanos.get(WAIT_SECONDS, TimeUnit.SECONDS)).isLessThan(TimeUnit.SECONDS.toNanos(WAIT_SECONDS));
            clientSideClosed.get(WAIT_SECONDS, TimeUnit.SECONDS);
            serverSideClosed.get(WAIT_SECONDS, TimeUnit.SECONDS);
            assertThat(connection.isConnected()).isFalse();
            assertThat(refused.get().isConnected()).isFalse();
        }
    }
}
