package io.reverb.bench.floor;

import io.reverb.bench.target.BenchServer;
import io.reverb.bench.target.CallObserver;
import io.reverb.bench.target.EchoClient;
import io.reverb.bench.target.Target;
import io.reverb.bench.target.TargetSettings;
import org.agrona.concurrent.UnsafeBuffer;

import java.io.Closeable;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * The floor of {@code tcp://}: an echo over one plain Java NIO socket per client, no RPC (the socket path alone, as
 * {@link NioEchoFloor} measures it by hand). Address {@code floor+tcp://host:port} ({@code floor+tcp} alone on the
 * command line is {@code floor+tcp://127.0.0.1:0}, an ephemeral loopback port).
 *
 * <p>A message is framed as a 4-byte length (of what follows), the lane's number (4 bytes), both in the host's byte
 * order (client and server are processes of one machine, or of two namespaces of one), then the request's bytes;
 * the server reads a whole frame and writes it back on one thread per connection, the client writes its lanes'
 * frames in turn and completes calls on one reading thread. Sockets have {@code TCP_NODELAY} and the kernel's
 * buffer sizes. Polling: {@code BUSY} reads and writes non-blocking with a busy spin on both sides; {@code ADAPTIVE}
 * (the default) and {@code EVENT} block in the kernel. At most {@value #MAX_PAYLOAD} payload bytes (a longer one
 * is refused, no call made); a frame announcing more ends its connection. Unary only.
 */
public final class TcpFloorTarget implements Target
{
    /** The URI scheme. */
    public static final String SCHEME = "floor+tcp";
    /** The longest payload a call carries: 16 MiB. */
    public static final int MAX_PAYLOAD = 16 << 20;
    /** The address a bare {@code floor+tcp} stands for. */
    static final String LOOPBACK = SCHEME + "://127.0.0.1:0";
    private static final int LENGTH = 4;
    private static final int MAX_CONNECTIONS = 256;

    @Override
    public String framework()
    {
        return FloorTargets.FRAMEWORK;
    }

    @Override
    public boolean handles(final URI uri)
    {
        return SCHEME.equals(uri.getScheme());
    }

    static boolean spins(final TargetSettings settings)
    {
        return settings.polling() != null && "BUSY".equals(settings.polling().toUpperCase(Locale.ROOT));
    }

    private static InetSocketAddress address(final URI uri, final boolean server)
    {
        if (uri.getHost() == null || (!server && uri.getPort() <= 0))
        {
            throw new IllegalArgumentException("a floor+tcp address needs a host" + (server ? "" : " and a port") +
                ", e.g. floor+tcp://127.0.0.1:7404: " + uri);
        }
        return new InetSocketAddress(uri.getHost(), Math.max(0, uri.getPort()));
    }

    private static void configure(final SocketChannel channel, final boolean spin) throws IOException
    {
        channel.setOption(StandardSocketOptions.TCP_NODELAY, true);
        channel.configureBlocking(!spin);
    }

    /**
     * @param length a frame's length field, from the peer.
     * @return true if it is a lane's number and a payload this target carries.
     */
    static boolean validLength(final int length)
    {
        return length >= EngineFloorTarget.HEADER && length <= EngineFloorTarget.HEADER + MAX_PAYLOAD;
    }

    @Override
    public BenchServer startServer(final URI uri, final TargetSettings settings) throws IOException
    {
        final ServerSocketChannel listener = ServerSocketChannel.open();
        try
        {
            listener.bind(address(uri, true));
        }
        catch (final IOException | RuntimeException ex)
        {
            listener.close();
            throw ex;
        }
        final Server server = new Server(listener, spins(settings));
        final Thread acceptor = new Thread(server::accept, "floor-tcp-accept");
        acceptor.setDaemon(true);
        acceptor.start();
        final InetSocketAddress bound = (InetSocketAddress)listener.getLocalAddress();
        final String address = FloorTargets.withQuery(SCHEME + "://" + uri.getHost() + ":" + bound.getPort(), uri);
        return new BenchServer()
        {
            @Override
            public String uri()
            {
                return address;
            }

            @Override
            public void close()
            {
                server.close();
                try
                {
                    acceptor.join(TimeUnit.SECONDS.toMillis(10));
                }
                catch (final InterruptedException ex)
                {
                    Thread.currentThread().interrupt();
                }
            }
        };
    }

    @Override
    public EchoClient connect(final URI uri, final TargetSettings settings) throws IOException
    {
        final boolean readReplies = FloorTargets.readsReplies(uri);
        final SocketChannel channel = SocketChannel.open();
        try
        {
            channel.connect(address(uri, false));
            configure(channel, spins(settings));
            final Client client = new Client(channel);
            client.readReplies = readReplies;
            return client;
        }
        catch (final IOException | RuntimeException ex)
        {
            channel.close();
            throw ex;
        }
    }

    /** @return a frame buffer in the byte order the lane number is read in ({@link FloorClient} reads it natively). */
    private static ByteBuffer allocate(final int capacity)
    {
        return ByteBuffer.allocateDirect(capacity).order(ByteOrder.nativeOrder());
    }

    /** Reads until the buffer is full; false at the end of the stream. Spins on a non-blocking channel. */
    static boolean readFully(final SocketChannel channel, final ByteBuffer buffer) throws IOException
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

    static void writeFully(final SocketChannel channel, final ByteBuffer buffer) throws IOException
    {
        while (buffer.hasRemaining())
        {
            if (channel.write(buffer) == 0)
            {
                Thread.onSpinWait();
            }
        }
    }

    /** The server: an accepting thread, and an echo thread per connection. */
    private static final class Server
    {
        private final ServerSocketChannel listener;
        private final boolean spin;
        private final Set<SocketChannel> connections = ConcurrentHashMap.newKeySet();
        private volatile boolean running = true;

        Server(final ServerSocketChannel listener, final boolean spin)
        {
            this.listener = listener;
            this.spin = spin;
        }

        void accept()
        {
            while (running)
            {
                final SocketChannel channel;
                try
                {
                    channel = listener.accept();
                }
                catch (final IOException ex)
                {
                    return; // closed
                }
                if (connections.size() >= MAX_CONNECTIONS)
                {
                    closeQuietly(channel); // a bench server, not a service: more clients than a run has is a fault
                    continue;
                }
                connections.add(channel);
                final Thread echo = new Thread(() -> echo(channel), "floor-tcp-echo");
                echo.setDaemon(true);
                echo.start();
            }
        }

        private void echo(final SocketChannel channel)
        {
            try
            {
                configure(channel, spin);
                ByteBuffer frame = allocate(LENGTH + EngineFloorTarget.HEADER + 1024);
                while (running)
                {
                    frame.clear().limit(LENGTH);
                    if (!readFully(channel, frame))
                    {
                        return;
                    }
                    final int length = frame.getInt(0);
                    if (!validLength(length))
                    {
                        return; // not a frame of this target: the connection ends
                    }
                    if (frame.capacity() < LENGTH + length)
                    {
                        frame = allocate(LENGTH + length);
                        frame.putInt(0, length);
                    }
                    frame.limit(LENGTH + length).position(LENGTH);
                    if (!readFully(channel, frame))
                    {
                        return;
                    }
                    frame.flip();
                    writeFully(channel, frame);
                }
            }
            catch (final IOException ex)
            {
                // the client went away (or the server is closing): this connection ends
            }
            finally
            {
                connections.remove(channel);
                closeQuietly(channel);
            }
        }

        void close()
        {
            running = false;
            closeQuietly(listener);
            connections.forEach(Server::closeQuietly);
        }

        private static void closeQuietly(final Closeable closeable)
        {
            try
            {
                closeable.close();
            }
            catch (final IOException ex)
            {
                // closing: nothing left to do with it
            }
        }
    }

    /** The client: lanes write their frames in turn on one socket, one thread reads the replies. */
    private static final class Client extends FloorClient implements Runnable
    {
        private final SocketChannel channel;
        private final Object writing = new Object();
        private final Thread reader;
        private volatile boolean running = true;
        private volatile IOException failure;

        Client(final SocketChannel channel)
        {
            super(SCHEME);
            this.channel = channel;
            reader = new Thread(this, "floor-tcp-client");
            reader.setDaemon(true);
            reader.start();
        }

        @Override
        public void run()
        {
            ByteBuffer frame = allocate(LENGTH + EngineFloorTarget.HEADER + 1024);
            UnsafeBuffer view = new UnsafeBuffer(frame);
            try
            {
                while (running)
                {
                    frame.clear().limit(LENGTH);
                    if (!readFully(channel, frame))
                    {
                        fail(new IOException("floor+tcp: the server closed the connection"));
                        return;
                    }
                    final int length = frame.getInt(0);
                    if (!validLength(length))
                    {
                        fail(new IOException("floor+tcp: the server sent a frame of " + length + " bytes"));
                        return;
                    }
                    if (frame.capacity() < LENGTH + length)
                    {
                        frame = allocate(LENGTH + length);
                        view = new UnsafeBuffer(frame);
                    }
                    frame.limit(LENGTH + length).position(LENGTH);
                    if (!readFully(channel, frame))
                    {
                        fail(new IOException("floor+tcp: the server closed the connection"));
                        return;
                    }
                    onReply(view, LENGTH, length);
                }
            }
            catch (final ClosedChannelException ex)
            {
                fail(new IOException("floor+tcp client closed", ex));
            }
            catch (final IOException ex)
            {
                fail(ex);
            }
        }

        private void fail(final IOException cause)
        {
            failure = cause;
            running = false;
            failLanes(cause);
        }

        @Override
        Lane newLane(final int number, final CallObserver observer)
        {
            return new TcpLane(number, observer);
        }

        @Override
        public void close()
        {
            running = false;
            try
            {
                channel.close();
                reader.join(TimeUnit.SECONDS.toMillis(10));
            }
            catch (final IOException ex)
            {
                // closing
            }
            catch (final InterruptedException ex)
            {
                Thread.currentThread().interrupt();
            }
            failLanes(new IOException("floor+tcp client closed"));
        }

        /** A lane with its whole frame in direct memory: length, lane number, payload. */
        private final class TcpLane extends Lane
        {
            private ByteBuffer frame;

            TcpLane(final int number, final CallObserver observer)
            {
                super(number, observer);
                prepare();
            }

            @Override
            void prepare()
            {
                if (sent.length > MAX_PAYLOAD)
                {
                    throw new IllegalArgumentException("floor+tcp carries at most " + MAX_PAYLOAD +
                        " payload bytes, not " + sent.length);
                }
                frame = allocate(LENGTH + EngineFloorTarget.HEADER + sent.length);
                frame.putInt(EngineFloorTarget.HEADER + sent.length).putInt(number).put(sent).flip();
            }

            @Override
            void send()
            {
                final IOException failed = failure;
                if (failed != null)
                {
                    complete(FloorTargets.UNAVAILABLE, failed);
                    return;
                }
                try
                {
                    synchronized (writing)
                    {
                        frame.clear();
                        writeFully(channel, frame);
                    }
                }
                catch (final IOException ex)
                {
                    complete(FloorTargets.UNAVAILABLE, new IOException("floor+tcp send failed: " + ex, ex));
                }
            }
        }
    }
}
