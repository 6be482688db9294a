package io.reverb.rdma.provider.handshake;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

import io.reverb.common.LogLimiter;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A failing {@code accept()} (e.g. EMFILE) pauses accepting, doubling per failure in a row, instead of spinning the
 * handshake thread on a socket that stays acceptable. The thread's clock is the test's: it moves only when the test
 * moves it, so the counts below are exact however slow the machine; the test waits for the thread to have read the
 * clock (gone round its loop) a few times before it checks that nothing else happened.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class ListenerHandshakesAcceptPauseTest
{
    private static final String NAME = "pause-test";
    /** Loop turns the thread makes, reading the frozen clock, before a check that it did not accept meanwhile. */
    private static final int TURNS = 3;

    private final AtomicLong now = new AtomicLong(1_000_000_000L);
    private final AtomicLong clockReads = new AtomicLong();
    private final AtomicInteger attempts = new AtomicInteger();
    private final AtomicInteger failuresLeft = new AtomicInteger();
    private final List<String> lines = new CopyOnWriteArrayList<>();

    /** Header: the body's length (at most 64); the body: the client's name, which the handshake becomes. */
    private static final class NameProtocol implements ListenerHandshakes.Protocol<String>
    {
        @Override
        public int headerLength()
        {
            return Integer.BYTES;
        }

        @Override
        public int bodyLength(final ByteBuffer header) throws IOException
        {
            final int length = header.getInt(0);
            if (length < 0 || length > 64)
            {
                throw new IOException("body of " + length + " bytes");
            }
            return length;
        }

        @Override
        public String complete(final SocketChannel channel, final ByteBuffer header, final ByteBuffer body)
            throws IOException
        {
            channel.close();
            return StandardCharsets.US_ASCII.decode(body).toString();
        }

        @Override
        public void discard(final String request)
        {
        }
    }

    @Test
    void shouldPauseAcceptingAfterAFailureDoublingThePauseUntilAnAcceptSucceeds() throws Exception
    {
        final ServerSocketChannel server = ServerSocketChannel.open();
        server.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 16);
        final InetSocketAddress address = (InetSocketAddress)server.getLocalAddress();
        failuresLeft.set(3);
        final ListenerHandshakes<String> handshakes = new ListenerHandshakes<>(NAME, server, new NameProtocol(),
            TimeUnit.SECONDS.toNanos(30), 4, new LogLimiter((line, stack) -> lines.add(line), now::get),
            () ->
            {
                attempts.incrementAndGet();
                if (failuresLeft.getAndDecrement() > 0)
                {
                    throw new IOException("Too many open files");
                }
                return server.accept();
            },
            () ->
            {
                clockReads.incrementAndGet();
                return now.get();
            });
        try (SocketChannel first = connect(address, "first"))
        {
            // First failure: accepting pauses for MIN_NANOS, during which the thread does not try again.
            await("the first accept attempt", () -> attempts.get() >= 1);
            assertAttemptsAfterTurns(1);
            advance(AcceptPause.MIN_NANOS - 1);
            assertAttemptsAfterTurns(1);
            advance(1);
            await("the second accept attempt", () -> attempts.get() >= 2);
            // Second failure in a row: twice as long.
            advance(2 * AcceptPause.MIN_NANOS - 1);
            assertAttemptsAfterTurns(2);
            advance(1);
            await("the third accept attempt", () -> attempts.get() >= 3);
            advance(4 * AcceptPause.MIN_NANOS - 1);
            assertAttemptsAfterTurns(3);
            // Accept works again: the waiting client gets in and its handshake completes.
            advance(1);
            assertThat(handshakes.poll(TimeUnit.SECONDS.toNanos(20))).isEqualTo("first");
            assertThat(attempts.get()).as("one attempt per pause, the accept that worked, and one that found no other")
                .isEqualTo(5);
            // Each failure was reported, naming the cause and the pause.
            assertThat(handshakes.refused()).isEqualTo(3);
            assertThat(lines).hasSize(3);
            assertThat(lines.get(0)).startsWith(NAME + " refused a connection: accept() failed")
                .contains("Too many open files").endsWith("not accepting for 10 ms");
            assertThat(lines.get(1)).endsWith("not accepting for 20 ms");
            assertThat(lines.get(2)).endsWith("not accepting for 40 ms");
        }
        // The accepted socket reset the pause: one more failure pauses for MIN_NANOS again, not 80 ms.
        failuresLeft.set(1);
        final int before = attempts.get();
        try (SocketChannel second = connect(address, "second"))
        {
            await("the failing attempt", () -> attempts.get() >= before + 1);
            assertAttemptsAfterTurns(before + 1);
            advance(AcceptPause.MIN_NANOS);
            assertThat(handshakes.poll(TimeUnit.SECONDS.toNanos(20))).isEqualTo("second");
            assertThat(lines).hasSize(4);
            assertThat(lines.get(3)).endsWith("not accepting for 10 ms");
        }
        finally
        {
            handshakes.close();
        }
        assertThat(Thread.getAllStackTraces().keySet()).noneMatch(t -> t.getName().equals("reverb-handshakes-" + NAME));
    }

    @Test
    void shouldDoubleThePauseUpToTheCeilingAndStartOverAfterASuccess()
    {
        final AcceptPause pause = new AcceptPause();
        assertThat(pause.failed()).isEqualTo(AcceptPause.MIN_NANOS);
        assertThat(pause.failed()).isEqualTo(2 * AcceptPause.MIN_NANOS);
        assertThat(pause.failed()).isEqualTo(4 * AcceptPause.MIN_NANOS);
        for (int i = 0; i < 100; i++)
        {
            assertThat(pause.failed()).isBetween(AcceptPause.MIN_NANOS, AcceptPause.MAX_NANOS);
        }
        assertThat(pause.failed()).isEqualTo(AcceptPause.MAX_NANOS);
        assertThat(pause.failures()).isEqualTo(104);
        pause.succeeded();
        assertThat(pause.failures()).isZero();
        assertThat(pause.failed()).isEqualTo(AcceptPause.MIN_NANOS);
    }

    private static SocketChannel connect(final InetSocketAddress address, final String name) throws IOException
    {
        final SocketChannel channel = SocketChannel.open(address);
        final byte[] body = name.getBytes(StandardCharsets.US_ASCII);
        final ByteBuffer handshake = ByteBuffer.allocate(Integer.BYTES + body.length).putInt(body.length).put(body);
        handshake.flip();
        while (handshake.hasRemaining())
        {
            channel.write(handshake);
        }
        return channel;
    }

    private void advance(final long nanos)
    {
        now.addAndGet(nanos);
    }

    /**
     * Waits until the thread has gone round its loop {@link #TURNS} times since now (each turn reads the clock once,
     * after its select), then checks the accept attempts: were it still watching the listening socket, each turn
     * would have tried to accept the client waiting there.
     */
    private void assertAttemptsAfterTurns(final int expected)
    {
        final long reads = clockReads.get();
        await(TURNS + " turns of the handshake thread", () -> clockReads.get() >= reads + TURNS);
        assertThat(attempts.get()).as("accept attempts").isEqualTo(expected);
    }

    private static void await(final String what, final BooleanSupplier condition)
    {
        final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (!condition.getAsBoolean())
        {
            if (System.nanoTime() - deadline > 0)
            {
                fail("timed out waiting for " + what);
            }
            try
            {
                Thread.sleep(1);
            }
            catch (final InterruptedException ex)
            {
                Thread.currentThread().interrupt();
                fail("interrupted waiting for " + what);
            }
        }
    }
}
