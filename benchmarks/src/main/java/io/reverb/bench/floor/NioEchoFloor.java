package io.reverb.bench.floor;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.Arrays;
import java.util.Locale;

/**
 * The loopback TCP floor: an echo of N bytes between two processes with plain Java NIO and no RPC, to compare
 * {@code tcp://} with what the socket path alone costs. A benchmark tool, not a test; {@link TcpFloorTarget}
 * ({@code floor+tcp}) is the same floor as a {@code reverb-bench} target, under the load generator.
 *
 * <p>Usage: {@code java -cp reverb-bench.jar io.reverb.bench.floor.NioEchoFloor server SIZE SOCKBUF [spin|block]}
 * prints the port it listens on (127.0.0.1 only) and echoes one client; {@code ... client SIZE SOCKBUF [spin|block]
 * PORT} measures round trips (3,000 for sizes over 100 kB, else 100,000, after as many for warm-up) and prints
 * p50/p99/mean/min. {@code SOCKBUF} 0 keeps the kernel's socket buffer sizes; {@code spin} reads and writes
 * non-blocking with a busy spin, {@code block} blocks in the kernel.
 */
public final class NioEchoFloor
{
    private NioEchoFloor()
    {
    }

    /**
     * @param args {@code server|client SIZE SOCKBUF [spin|block] [PORT]}.
     * @throws IOException if the socket fails.
     */
    public static void main(final String[] args) throws IOException
    {
        if (args.length < 3 || !("server".equals(args[0]) || "client".equals(args[0])))
        {
            System.err.println("usage: NioEchoFloor server|client SIZE SOCKBUF [spin|block] [PORT]");
            System.exit(2);
        }
        final int size = Integer.parseInt(args[1]);
        final int socketBuffer = Integer.parseInt(args[2]);
        final boolean spin = args.length > 3 && "spin".equals(args[3]);
        if ("server".equals(args[0]))
        {
            serve(size, socketBuffer, spin);
        }
        else
        {
            if (args.length < 5)
            {
                System.err.println("the client needs the server's PORT as its fifth argument");
                System.exit(2);
            }
            measure(size, socketBuffer, spin, Integer.parseInt(args[4]));
        }
    }

    private static void serve(final int size, final int socketBuffer, final boolean spin) throws IOException
    {
        try (ServerSocketChannel server = ServerSocketChannel.open())
        {
            if (socketBuffer > 0)
            {
                server.setOption(StandardSocketOptions.SO_RCVBUF, socketBuffer);
            }
            server.bind(new InetSocketAddress("127.0.0.1", 0));
            System.out.println(((InetSocketAddress)server.getLocalAddress()).getPort());
            System.out.flush();
            try (SocketChannel channel = server.accept())
            {
                configure(channel, socketBuffer, spin);
                final ByteBuffer buffer = ByteBuffer.allocateDirect(size);
                while (true)
                {
                    buffer.clear();
                    if (!readFully(channel, buffer))
                    {
                        return;
                    }
                    buffer.flip();
                    writeFully(channel, buffer);
                }
            }
        }
    }

    private static void measure(final int size, final int socketBuffer, final boolean spin, final int port)
        throws IOException
    {
        try (SocketChannel channel = SocketChannel.open())
        {
            if (socketBuffer > 0)
            {
                channel.setOption(StandardSocketOptions.SO_RCVBUF, socketBuffer);
            }
            channel.connect(new InetSocketAddress("127.0.0.1", port));
            configure(channel, socketBuffer, spin);
            final ByteBuffer buffer = ByteBuffer.allocateDirect(size);
            final int rounds = size > 100_000 ? 3_000 : 100_000;
            final long[] nanos = new long[rounds];
            for (int pass = 0; pass < 2; pass++) // the first pass warms up; the second is kept
            {
                for (int i = 0; i < rounds; i++)
                {
                    final long start = System.nanoTime();
                    buffer.clear();
                    writeFully(channel, buffer);
                    buffer.clear();
                    if (!readFully(channel, buffer))
                    {
                        throw new IOException("the echo server closed the connection");
                    }
                    nanos[i] = System.nanoTime() - start;
                }
            }
            Arrays.sort(nanos);
            final double mean = Arrays.stream(nanos).average().orElse(0);
            System.out.printf(Locale.ROOT, "size %d buf %d spin %s: p50 %.1f us, p99 %.1f us, mean %.1f us, min %.1f us%n",
                size, socketBuffer, spin, nanos[rounds / 2] / 1e3, nanos[rounds * 99 / 100] / 1e3, mean / 1e3,
                nanos[0] / 1e3);
        }
    }

    private static void configure(final SocketChannel channel, final int socketBuffer, final boolean spin)
        throws IOException
    {
        channel.setOption(StandardSocketOptions.TCP_NODELAY, true);
        if (socketBuffer > 0)
        {
            channel.setOption(StandardSocketOptions.SO_SNDBUF, socketBuffer);
            channel.setOption(StandardSocketOptions.SO_RCVBUF, socketBuffer);
        }
        channel.configureBlocking(!spin);
    }

    private static boolean readFully(final SocketChannel channel, final ByteBuffer buffer) throws IOException
    {
        while (buffer.hasRemaining())
        {
            final int read = channel.read(buffer);
            if (read < 0)
            {
                return false;
            }
            if (read == 0)
            {
                Thread.onSpinWait();
            }
        }
        return true;
    }

    private static void writeFully(final SocketChannel channel, final ByteBuffer buffer) throws IOException
    {
        while (buffer.hasRemaining())
        {
            if (channel.write(buffer) == 0)
            {
                Thread.onSpinWait();
            }
        }
    }
}
