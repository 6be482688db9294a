package io.reverb.bench.floor;

import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.Locale;
import java.util.concurrent.atomic.AtomicLong;

/**
 * What one direction of a large message costs between two cores, and what overlapping its two copies would save:
 * a writer thread puts a message into shared (direct) memory, as a direct write puts it into the peer's rendezvous
 * buffer, and a reader thread on the other core answers once it has what the mode asks for:
 * <ul>
 *   <li>{@code write-only}: the reader only sees the last byte land, and reads none of the message. This is the
 *       engine floor's reply direction ({@code floor}'s client reads the lane number of its reply, never its
 *       payload);</li>
 *   <li>{@code write-then-copy}: the reader copies the whole message into four reused heap arrays once it has all
 *       landed. This is what an RPC does in each direction today (the marshaller's copy out of registered memory,
 *       after the write);</li>
 *   <li>{@code overlap-64KiB}, {@code overlap-256KiB}: the writer publishes its progress after each step and the
 *       reader copies each step as soon as it has landed. This is a copy-out pipelined with the transfer (chunk
 *       progress from the sender, a parse that starts before the last byte), the lead issue 40 left for the
 *       1 MiB goal.</li>
 * </ul>
 * The writer waits for each answer before the next message (a ping-pong, as the benchmarks' closed loop), and the wall
 * time of each message is recorded. The modes alternate round by round, as {@code reverb-bench --rounds} does, because
 * a shared VM changes speed over minutes. A benchmark tool, not a test: two spinning threads, one per core.
 *
 * <p>Usage: {@code java -Xms1g -Xmx1g -cp reverb-bench.jar io.reverb.bench.floor.CopyOverlapFloor [BYTES] [ROUNDS]}
 * (default 1 MiB, 3 rounds of 1 s per mode); prints each mode's p10, p50 and p90 in µs per message for each round.
 */
public final class CopyOverlapFloor
{
    private static final String[] MODES = {"write-only", "write-then-copy", "overlap-64KiB", "overlap-256KiB"};
    private static final int PIECES = 4;
    private static final long MEASURE_NANOS = 1_000_000_000L;
    private static final int WARMUP_MESSAGES = 300;
    private static final int MAX_SAMPLES = 1 << 20;

    /** The writer's progress: message number in the high 32 bits, bytes landed in the low 32. */
    private final AtomicLong progress = new AtomicLong();
    /** The last message the reader answered. */
    private final AtomicLong answered = new AtomicLong();
    private final ByteBuffer shared;
    private final byte[] message;
    private final byte[][] pieces;
    private final int length;
    private volatile int step;
    private volatile boolean copy;
    private volatile boolean stop;

    private CopyOverlapFloor(final int length)
    {
        this.length = length;
        this.shared = ByteBuffer.allocateDirect(length);
        this.message = new byte[length];
        for (int i = 0; i < length; i++)
        {
            message[i] = (byte)i;
        }
        this.pieces = new byte[PIECES][];
        final int piece = (length + PIECES - 1) / PIECES;
        for (int i = 0; i < PIECES; i++)
        {
            pieces[i] = new byte[Math.max(0, Math.min(piece, length - i * piece))];
        }
    }

    /**
     * @param args {@code [BYTES] [ROUNDS]}.
     * @throws InterruptedException if interrupted while stopping the reader.
     */
    public static void main(final String[] args) throws InterruptedException
    {
        final int length = args.length > 0 ? Integer.parseInt(args[0]) : 1 << 20;
        final int rounds = args.length > 1 ? Integer.parseInt(args[1]) : 3;
        if (length < PIECES)
        {
            throw new IllegalArgumentException("a message of at least " + PIECES + " bytes: " + length);
        }
        final CopyOverlapFloor floor = new CopyOverlapFloor(length);
        final Thread reader = new Thread(floor::read, "copy-overlap-reader");
        reader.setDaemon(true);
        reader.start();
        System.out.printf(Locale.ROOT, "%d-byte messages from one core to the other, µs per message (p10 / p50 / p90)%n",
            length);
        long number = 0;
        for (int round = 1; round <= rounds; round++)
        {
            final StringBuilder line = new StringBuilder("round " + round + ':');
            for (final String mode : MODES)
            {
                floor.copy = !"write-only".equals(mode);
                floor.step = switch (mode)
                {
                    case "overlap-64KiB" -> 64 * 1024;
                    case "overlap-256KiB" -> 256 * 1024;
                    default -> length;
                };
                for (int i = 0; i < WARMUP_MESSAGES; i++)
                {
                    floor.send(++number);
                }
                final long[] samples = new long[MAX_SAMPLES];
                int n = 0;
                final long end = System.nanoTime() + MEASURE_NANOS;
                long now = System.nanoTime();
                while (now < end && n < MAX_SAMPLES)
                {
                    floor.send(++number);
                    final long after = System.nanoTime();
                    samples[n++] = after - now;
                    now = after;
                }
                Arrays.sort(samples, 0, n);
                line.append(String.format(Locale.ROOT, "  %s %.1f / %.1f / %.1f", mode,
                    samples[n / 10] / 1000.0, samples[n / 2] / 1000.0, samples[n * 9 / 10] / 1000.0));
            }
            System.out.println(line);
        }
        floor.stop = true;
        reader.join(1000);
    }

    /** The writer: the message into shared memory, its progress after each step, then wait for the answer. */
    private void send(final long number)
    {
        final int step = this.step;
        for (int offset = 0; offset < length; offset += step)
        {
            final int n = Math.min(step, length - offset);
            shared.put(offset, message, offset, n);
            progress.setRelease((number << 32) | (offset + n));
        }
        while (answered.getAcquire() != number)
        {
            Thread.onSpinWait();
        }
    }

    /** The reader: follows the progress of each message, copies what the mode asks for, answers. */
    private void read()
    {
        long number = 1;
        while (!stop)
        {
            final boolean copy = this.copy;
            final boolean overlap = step < length;
            int copied = 0;
            while (copied < length)
            {
                final long seen = progress.getAcquire();
                final int landed = (seen >>> 32) == number ? (int)seen : 0;
                if (landed <= copied || (!overlap && landed < length))
                {
                    if (stop)
                    {
                        return;
                    }
                    Thread.onSpinWait();
                    continue;
                }
                if (copy)
                {
                    copyOut(copied, landed);
                }
                copied = landed;
            }
            answered.setRelease(number);
            number++;
        }
    }

    /** Bytes [from, to) of the shared message into the pieces, as a marshaller copies a field into its rope. */
    private void copyOut(final int from, final int to)
    {
        final int piece = pieces[0].length;
        int at = from;
        while (at < to)
        {
            final int index = at / piece;
            final int within = at - index * piece;
            final int n = Math.min(to - at, piece - within);
            shared.get(at, pieces[index], within, n);
            at += n;
        }
    }
}
