package io.reverb.rpc.transport;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

import io.reverb.common.ClaimResult;
import io.reverb.common.WriteClaim;
import java.io.IOException;
import java.net.URI;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * What every {@link TransportProvider} must do for rpc-core, checked through the SPI alone (no RPC layer): ordered
 * message delivery with exact bytes, claim/commit/abort, back-pressure followed by onWritable, TOO_LARGE, close
 * seen once on both ends, and resource accounting back to zero. Subclass with {@link #newServerUri()}; rpc-core
 * runs it for inproc, rdma-transport can for shm/tcp/rdma.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
public abstract class AbstractTransportSpiTest
{
    protected static final Duration TIMEOUT = Duration.ofSeconds(20);

    private final List<AutoCloseable> closeables = new ArrayList<>();
    private TransportProvider provider;

    /**
     * @return a fresh server address for this transport.
     */
    protected abstract String newServerUri();

    /** Records everything a connection reports; onMessage can be held back to make a slow reader. */
    protected static class Recorder implements ConnectionHandler
    {
        final LinkedBlockingQueue<byte[]> messages = new LinkedBlockingQueue<>();
        final CompletableFuture<Throwable> closed = new CompletableFuture<>();
        final AtomicInteger closeCount = new AtomicInteger();
        final AtomicInteger writableCount = new AtomicInteger();
        final Semaphore gate = new Semaphore(Integer.MAX_VALUE);
        volatile Connection connection;

        @Override
        public void onMessage(final Connection connection, final ByteBuffer message)
        {
            gate.acquireUninterruptibly();
            final byte[] copy = new byte[message.remaining()];
            message.get(message.position(), copy);
            messages.add(copy);
        }

        @Override
        public void onWritable(final Connection connection)
        {
            writableCount.incrementAndGet();
            synchronized (this)
            {
                notifyAll();
            }
        }

        @Override
        public void onClose(final Connection connection, final Throwable cause)
        {
            closeCount.incrementAndGet();
            closed.complete(cause);
        }
    }

    /** A connected pair: client end, and the server's recorder. */
    protected final class Pair
    {
        final Connection client;
        final Recorder clientRecorder;
        final Recorder serverRecorder;

        Pair(final Connection client, final Recorder clientRecorder, final Recorder serverRecorder)
        {
            this.client = client;
            this.clientRecorder = clientRecorder;
            this.serverRecorder = serverRecorder;
        }
    }

    protected Pair connect() throws Exception
    {
        final URI uri = Transports.parse(newServerUri());
        provider = Transports.providerFor(uri);
        final Recorder serverRecorder = new Recorder();
        final ServerListener listener = provider.listen(uri, c ->
        {
            serverRecorder.connection = c;
            return serverRecorder;
        });
        closeables.add(listener);
        final Recorder clientRecorder = new Recorder();
        final Connection client = provider.connect(Transports.parse(listener.address()), clientRecorder)
            .get(TIMEOUT.toSeconds(), TimeUnit.SECONDS);
        clientRecorder.connection = client;
        closeables.add(client::close);
        return new Pair(client, clientRecorder, serverRecorder);
    }

    private static int send(final Connection connection, final byte[] bytes)
    {
        final WriteClaim claim = new WriteClaim();
        final int result = connection.tryClaim(bytes.length, claim);
        if (result != ClaimResult.OK)
        {
            return result;
        }
        assertThat(claim.buffer().remaining()).isEqualTo(bytes.length);
        claim.buffer().put(claim.offset(), bytes);
        return claim.commit();
    }

    private static byte[] pattern(final int length, final int seed)
    {
        final byte[] bytes = new byte[length];
        for (int i = 0; i < length; i++)
        {
            bytes[i] = (byte)(seed * 31 + i);
        }
        return bytes;
    }

    @AfterEach
    void closeAndCheckResources() throws Exception
    {
        for (int i = closeables.size() - 1; i >= 0; i--)
        {
            closeables.get(i).close();
        }
        if (provider != null)
        {
            final ResourceUsage usage = provider.resourceUsage();
            final long deadline = System.nanoTime() + TIMEOUT.toNanos();
            while (usage.buffersInUse() != 0 || usage.bytesInUse() != 0)
            {
                if (System.nanoTime() - deadline > 0)
                {
                    fail("transport resources leaked: " + usage.describe());
                }
                Thread.sleep(5);
            }
        }
    }

    @Test
    void shouldDeliverMessagesInOrderWithExactBytesBothWays() throws Exception
    {
        final Pair pair = connect();
        final int count = 1000;
        for (int i = 0; i < count; i++)
        {
            final byte[] bytes = pattern(1 + (i * 37) % 3000, i);
            int result;
            while ((result = send(pair.client, bytes)) == ClaimResult.BACK_PRESSURED)
            {
                Thread.sleep(1);
            }
            assertThat(result).isEqualTo(ClaimResult.OK);
        }
        for (int i = 0; i < count; i++)
        {
            final byte[] received = pair.serverRecorder.messages.poll(TIMEOUT.toSeconds(), TimeUnit.SECONDS);
            assertThat(received).as("message %d", i).isEqualTo(pattern(1 + (i * 37) % 3000, i));
        }
        assertThat(send(pair.serverRecorder.connection, pattern(10, 7))).isEqualTo(ClaimResult.OK);
        assertThat(pair.clientRecorder.messages.poll(TIMEOUT.toSeconds(), TimeUnit.SECONDS)).isEqualTo(pattern(10, 7));
    }

    @Test
    void shouldBackPressureSlowReaderAndSignalWritable() throws Exception
    {
        final Pair pair = connect();
        pair.serverRecorder.gate.drainPermits();
        final byte[] bytes = pattern(1024, 1);
        int sent = 0;
        int result;
        while ((result = send(pair.client, bytes)) == ClaimResult.OK)
        {
            sent++;
            if (sent > 256 * 1024)
            {
                fail("no back-pressure after 256 MiB: the transport buffers without bound");
            }
        }
        assertThat(result).isEqualTo(ClaimResult.BACK_PRESSURED);
        assertThat(pair.client.resourceUsage().bytesInUse()).isPositive();
        pair.serverRecorder.gate.release(Integer.MAX_VALUE / 2);
        final long deadline = System.nanoTime() + TIMEOUT.toNanos();
        synchronized (pair.clientRecorder)
        {
            while (pair.clientRecorder.writableCount.get() == 0 && System.nanoTime() < deadline)
            {
                pair.clientRecorder.wait(100);
            }
        }
        assertThat(pair.clientRecorder.writableCount.get()).as("onWritable after back-pressure").isPositive();
        for (int i = 0; i < sent; i++)
        {
            assertThat(pair.serverRecorder.messages.poll(TIMEOUT.toSeconds(), TimeUnit.SECONDS)).isNotNull();
        }
        int again;
        while ((again = send(pair.client, bytes)) == ClaimResult.BACK_PRESSURED)
        {
            Thread.sleep(1);
        }
        assertThat(again).isEqualTo(ClaimResult.OK);
    }

    @Test
    void shouldReleaseAbortedClaimAndRefuseTooLarge() throws Exception
    {
        final Pair pair = connect();
        final WriteClaim claim = new WriteClaim();
        assertThat(pair.client.tryClaim(100, claim)).isEqualTo(ClaimResult.OK);
        claim.abort();
        assertThat(claim.isActive()).isFalse();
        final long max = pair.client.maxMessageLength();
        if (max < Integer.MAX_VALUE)
        {
            assertThat(pair.client.tryClaim((int)max + 1, new WriteClaim())).isEqualTo(ClaimResult.TOO_LARGE);
        }
        assertThat(send(pair.client, pattern(5, 5))).isEqualTo(ClaimResult.OK);
        assertThat(pair.serverRecorder.messages.poll(TIMEOUT.toSeconds(), TimeUnit.SECONDS)).isEqualTo(pattern(5, 5));
        assertThat(pair.serverRecorder.messages).isEmpty();
    }

    @Test
    void shouldDeliverCommittedMessagesThenCloseBothEndsOnce() throws Exception
    {
        final Pair pair = connect();
        for (int i = 0; i < 10; i++)
        {
            assertThat(send(pair.client, pattern(64, i))).isEqualTo(ClaimResult.OK);
        }
        pair.client.close();
        pair.client.close();
        assertThat(pair.serverRecorder.closed.get(TIMEOUT.toSeconds(), TimeUnit.SECONDS)).isNull();
        assertThat(pair.clientRecorder.closed.get(TIMEOUT.toSeconds(), TimeUnit.SECONDS)).isNull();
        assertThat(pair.serverRecorder.messages).hasSize(10);
        assertThat(pair.client.isOpen()).isFalse();
        assertThat(pair.client.tryClaim(8, new WriteClaim())).isEqualTo(ClaimResult.CLOSED);
        Thread.sleep(50);
        assertThat(pair.serverRecorder.closeCount.get()).isEqualTo(1);
        assertThat(pair.clientRecorder.closeCount.get()).isEqualTo(1);
    }

    @Test
    void shouldFailConnectToAddressNobodyListensOn() throws Exception
    {
        final URI uri = Transports.parse(newServerUri());
        provider = Transports.providerFor(uri);
        final CompletableFuture<Connection> future;
        try
        {
            future = provider.connect(uri, new Recorder());
        }
        catch (final RuntimeException e)
        {
            fail("connect must report failure through the future, not throw: " + e);
            return;
        }
        try
        {
            future.get(TIMEOUT.toSeconds(), TimeUnit.SECONDS);
            fail("connected to an address nobody listens on");
        }
        catch (final ExecutionException e)
        {
            assertThat(e.getCause()).isInstanceOf(IOException.class);
        }
    }

    @Test
    void shouldAcceptManyConnectionsOnOneListener() throws Exception
    {
        final URI uri = Transports.parse(newServerUri());
        provider = Transports.providerFor(uri);
        final CountDownLatch received = new CountDownLatch(8);
        final ServerListener listener = provider.listen(uri, c -> new Recorder()
        {
            @Override
            public void onMessage(final Connection connection, final ByteBuffer message)
            {
                received.countDown();
            }
        });
        closeables.add(listener);
        for (int i = 0; i < 8; i++)
        {
            final Connection c = provider.connect(Transports.parse(listener.address()), new Recorder())
                .get(TIMEOUT.toSeconds(), TimeUnit.SECONDS);
            closeables.add(c::close);
            assertThat(send(c, pattern(16, i))).isEqualTo(ClaimResult.OK);
        }
        assertThat(received.await(TIMEOUT.toSeconds(), TimeUnit.SECONDS)).isTrue();
    }
}
