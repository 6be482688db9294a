package io.reverb.rpc.transport.inproc;

import static org.assertj.core.api.Assertions.assertThat;

import io.reverb.common.ClaimResult;
import io.reverb.rpc.transport.Connection;
import io.reverb.rpc.transport.ConnectionHandler;
import io.reverb.rpc.transport.ServerListener;
import io.reverb.common.WriteClaim;
import java.io.IOException;
import java.net.URI;
import java.nio.ByteBuffer;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class InprocTransportTest
{
    private final InprocTransportProvider provider = new InprocTransportProvider();

    /** A handler whose onMessage blocks until released: a slow reader. */
    private static final class Handler implements ConnectionHandler
    {
        final Semaphore permits = new Semaphore(0);
        final CountDownLatch writable = new CountDownLatch(1);
        final CompletableFuture<Throwable> closed = new CompletableFuture<>();
        volatile int received;
        volatile byte lastFirstByte;

        @Override
        public void onMessage(final Connection connection, final ByteBuffer message)
        {
            permits.acquireUninterruptibly();
            lastFirstByte = message.get(message.position());
            received++;
        }

        @Override
        public void onWritable(final Connection connection)
        {
            writable.countDown();
        }

        @Override
        public void onClose(final Connection connection, final Throwable cause)
        {
            closed.complete(cause);
        }
    }

    @Test
    void shouldBackPressureAtCapacityAndSignalWritableWhenReaderCatchesUp() throws Exception
    {
        final Handler serverHandler = new Handler();
        final Handler clientHandler = new Handler();
        final URI uri = URI.create("inproc://spi-test-bp?capacity=1024");
        try (ServerListener ignored = provider.listen(uri, c -> serverHandler))
        {
            final Connection client = provider.connect(uri, clientHandler).get(10, TimeUnit.SECONDS);
            final WriteClaim claim = new WriteClaim();
            int sent = 0;
            while (client.tryClaim(256, claim) == ClaimResult.OK)
            {
                claim.buffer().put(claim.offset(), (byte)sent);
                assertThat(claim.commit()).isEqualTo(ClaimResult.OK);
                sent++;
            }
            assertThat(sent).isEqualTo(4);
            assertThat(client.resourceUsage().bytesInUse()).isEqualTo(1024);
            serverHandler.permits.release(1);
            assertThat(clientHandler.writable.await(10, TimeUnit.SECONDS)).isTrue();
            assertThat(client.tryClaim(256, claim)).isEqualTo(ClaimResult.OK);
            claim.abort();
            serverHandler.permits.release(100);
            client.close();
            assertThat(serverHandler.closed.get(10, TimeUnit.SECONDS)).isNull();
            assertThat(clientHandler.closed.get(10, TimeUnit.SECONDS)).isNull();
            assertThat(serverHandler.received).isEqualTo(4);
            assertThat(serverHandler.lastFirstByte).isEqualTo((byte)3);
            assertThat(client.resourceUsage().bytesInUse()).isZero();
            assertThat(client.tryClaim(1, claim)).isEqualTo(ClaimResult.CLOSED);
        }
    }

    @Test
    void shouldRefuseTooLargeAndReportUnknownServer() throws Exception
    {
        final URI uri = URI.create("inproc://spi-test-large");
        try (ServerListener ignored = provider.listen(uri, c -> new Handler()))
        {
            final Connection client = provider.connect(uri, new Handler()).get(10, TimeUnit.SECONDS);
            assertThat(client.tryClaim(InprocTransportProvider.MAX_MESSAGE_LENGTH + 1, new WriteClaim()))
                .isEqualTo(ClaimResult.TOO_LARGE);
            client.close();
        }
        final CompletableFuture<Connection> missing = provider.connect(URI.create("inproc://nobody"), new Handler());
        try
        {
            missing.get(10, TimeUnit.SECONDS);
        }
        catch (final ExecutionException e)
        {
            assertThat(e.getCause()).isInstanceOf(IOException.class).hasMessageContaining("nobody");
        }
        assertThat(missing.isCompletedExceptionally()).isTrue();
    }

    @Test
    void shouldTellSurvivorWithCauseWhenPeerDies() throws Exception
    {
        final Handler serverHandler = new Handler();
        final Handler clientHandler = new Handler();
        final URI uri = URI.create("inproc://spi-test-kill");
        try (ServerListener ignored = provider.listen(uri, c -> serverHandler))
        {
            provider.connect(uri, clientHandler).get(10, TimeUnit.SECONDS);
            assertThat(InprocTransportProvider.killConnections("spi-test-kill")).isEqualTo(1);
            assertThat(clientHandler.closed.get(10, TimeUnit.SECONDS)).isInstanceOf(IOException.class);
        }
    }
}
