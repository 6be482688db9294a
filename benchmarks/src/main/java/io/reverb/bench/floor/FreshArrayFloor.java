package io.reverb.bench.floor;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.lang.reflect.Method;
import java.nio.ByteBuffer;
import java.util.Locale;

/**
 * What it costs to move a large message out of registered (direct) memory into the Java heap, in CPU time of the
 * copying thread: into a fresh {@code byte[]} (what {@code ProtoMarshaller.of} does), into a fresh array the JVM does
 * not zero ({@code jdk.internal.misc.Unsafe.allocateUninitializedArray}), into fresh 64 KiB arrays (never humongous),
 * and into one of four reused arrays (what {@code ProtoMarshaller.aliasing} does). Thread CPU time, not wall time, so
 * that a loaded machine does not change what it shows much. A benchmark tool, not a test.
 *
 * <p>Usage: {@code java --add-exports java.base/jdk.internal.misc=ALL-UNNAMED -Xms1g -Xmx1g -XX:+AlwaysPreTouch
 * -cp reverb-bench.jar io.reverb.bench.floor.FreshArrayFloor [BYTES] [ROUNDS]} (default 1 MiB, 5 rounds of 1 s per
 * mode); prints µs of CPU per message for each mode and round.
 */
public final class FreshArrayFloor
{
    private static final int CHUNK = 64 * 1024;
    private static final String[] MODES = {"fresh", "fresh-not-zeroed", "fresh-64KiB-chunks", "reused"};
    private static volatile Object sink;

    private FreshArrayFloor()
    {
    }

    /**
     * @param args {@code [BYTES] [ROUNDS]}.
     * @throws ReflectiveOperationException if {@code jdk.internal.misc} is not exported to this class.
     */
    public static void main(final String[] args) throws ReflectiveOperationException
    {
        final int length = args.length > 0 ? Integer.parseInt(args[0]) : 1 << 20;
        final int rounds = args.length > 1 ? Integer.parseInt(args[1]) : 5;
        final ByteBuffer source = ByteBuffer.allocateDirect(length);
        for (int i = 0; i < length; i++)
        {
            source.put(i, (byte)i);
        }
        final byte[][] reused = new byte[4][length];
        final Object unsafe = Class.forName("jdk.internal.misc.Unsafe").getMethod("getUnsafe").invoke(null);
        final Method allocateUninitialized =
            unsafe.getClass().getMethod("allocateUninitializedArray", Class.class, int.class);
        final ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        System.out.printf(Locale.ROOT, "%d-byte messages out of direct memory, µs of CPU per message%n", length);
        for (int round = 1; round <= rounds; round++)
        {
            final StringBuilder line = new StringBuilder("round " + round + ':');
            for (final String mode : MODES)
            {
                final long cpu0 = threads.getCurrentThreadCpuTime();
                final long end = System.nanoTime() + 1_000_000_000L;
                long messages = 0;
                while (System.nanoTime() < end)
                {
                    switch (mode)
                    {
                        case "fresh" -> sink = copy(source, new byte[length], length);
                        case "fresh-not-zeroed" ->
                            sink = copy(source, (byte[])allocateUninitialized.invoke(unsafe, byte.class, length), length);
                        case "fresh-64KiB-chunks" ->
                        {
                            for (int offset = 0; offset < length; offset += CHUNK)
                            {
                                final int n = Math.min(CHUNK, length - offset);
                                final byte[] chunk = new byte[n];
                                source.get(offset, chunk, 0, n);
                                sink = chunk;
                            }
                        }
                        default -> sink = copy(source, reused[(int)(messages & 3)], length);
                    }
                    messages++;
                }
                final double micros = (threads.getCurrentThreadCpuTime() - cpu0) / 1000.0 / messages;
                line.append(String.format(Locale.ROOT, "  %s %.1f", mode, micros));
            }
            System.out.println(line);
        }
    }

    private static byte[] copy(final ByteBuffer source, final byte[] target, final int length)
    {
        source.get(0, target, 0, length);
        return target;
    }
}
