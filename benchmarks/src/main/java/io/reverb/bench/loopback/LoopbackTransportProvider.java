package io.reverb.bench.loopback;

import io.reverb.common.ClaimResult;
import io.reverb.common.WriteClaim;
import io.reverb.rpc.transport.Connection;
import io.reverb.rpc.transport.ConnectionHandler;
import io.reverb.rpc.transport.ResourceUsage;
import io.reverb.rpc.transport.ServerListener;
import io.reverb.rpc.transport.TransportProvider;
import java.io.IOException;
import java.net.URI;
import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.Arrays;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;

/**
 * {@code loopback://name}: a transport for measuring rpc-core alone, with nothing of a real transport in the way. Both
 * ends live in one process and every message is delivered on the thread that committed it: a commit queues the
 * message, and a commit while no thread delivers delivers the queue (each delivered message a read batch of its own,
 * as the engine's pollers end a batch) until it is empty, so that a chain of calls, each issued from the completion of
 * the previous one, runs on one thread without recursion. Buffers are reused (no allocation per message once warm).
 *
 * <p>Used by {@link RpcCostProbe}; not a transport for applications (no back-pressure, no limits, no threads).
 */
public final class LoopbackTransportProvider implements TransportProvider
{
    /** The URI scheme. */
    public static final String SCHEME = "loopback";

    private static final ConcurrentHashMap<String, ServerListener.Acceptor> LISTENERS = new ConcurrentHashMap<>();
    private static final Delivery DELIVERY = new Delivery();
    /** Set by {@link RpcCostProbe}'s {@code phases} mode: each delivery's time split at its first commit. */
    static volatile Phases phases;

    @Override
    public String scheme()
    {
        return SCHEME;
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
        final ServerListener.Acceptor acceptor = LISTENERS.get(uri.getAuthority());
        if (acceptor == null)
        {
            return CompletableFuture.failedFuture(new IOException("no loopback server named '" + uri.getAuthority() + "'"));
        }
        final End client = new End("loopback-client", uri.toString(), 0);
        final End server = new End(uri.toString(), "loopback-client", 1);
        client.peer = server;
        server.peer = client;
        client.handler = handler;
        server.handler = acceptor.onConnection(server);
        if (server.handler == null)
        {
            return CompletableFuture.failedFuture(new IOException("the loopback server refused the connection"));
        }
        return CompletableFuture.completedFuture(client);
    }

    @Override
    public ServerListener listen(final URI uri, final ServerListener.Acceptor acceptor) throws IOException
    {
        final String name = uri.getAuthority();
        if (LISTENERS.putIfAbsent(name, acceptor) != null)
        {
            throw new IOException("a loopback server named '" + name + "' is already listening");
        }
        return new ServerListener()
        {
            @Override
            public String address()
            {
                return SCHEME + "://" + name;
            }

            @Override
            public int port()
            {
                return -1;
            }

            @Override
            public void close()
            {
                LISTENERS.remove(name, acceptor);
            }
        };
    }

    @Override
    public ResourceUsage resourceUsage()
    {
        return ResourceUsage.NONE;
    }

    /**
     * The messages committed and not yet delivered, in commit order, for every connection of the process: one thread
     * delivers at a time (the first that commits while none does, until the queue is empty), so each connection's
     * messages arrive one at a time as the transport SPI requires, even when a timer thread writes (a keep-alive PING)
     * while a chain of calls runs.
     */
    private static final class Delivery
    {
        private final ArrayDeque<Object> queue = new ArrayDeque<>(); // pairs: the receiving end, then its buffer (or CLOSE)
        private boolean running;

        void add(final End to, final Object message)
        {
            synchronized (this)
            {
                queue.addLast(to);
                queue.addLast(message);
                if (running)
                {
                    return;
                }
                running = true;
            }
            while (true)
            {
                final End next;
                final Object item;
                synchronized (this)
                {
                    next = (End)queue.pollFirst();
                    if (next == null)
                    {
                        running = false;
                        return;
                    }
                    item = queue.pollFirst();
                }
                try
                {
                    next.receive(item);
                }
                catch (final RuntimeException | Error e)
                {
                    synchronized (this)
                    {
                        running = false; // the queue's rest goes with the next commit
                    }
                    throw e;
                }
            }
        }
    }

    private static final Object CLOSE = new Object();

    /**
     * Each delivery's time on the delivering thread, split at the first message it commits: before it (what delays
     * the peer when the two ends are two processes) and after it (what runs while the peer already works), per side.
     * Two {@link System#nanoTime()} per delivery and one per commit: {@code raw} mode's figures are their cost.
     */
    static final class Phases
    {
        /** Per side (client 0, server 1): deliveries, nanoseconds before the first commit, after it. */
        final long[] deliveries = new long[2];
        final long[] before = new long[2];
        final long[] after = new long[2];
        private int side = -1;
        private long start;
        private long commit;

        void receiving(final int side)
        {
            this.side = side;
            commit = 0;
            start = System.nanoTime();
        }

        void committed()
        {
            if (side >= 0 && commit == 0)
            {
                commit = System.nanoTime();
            }
        }

        void received()
        {
            final long end = System.nanoTime();
            final int s = side;
            side = -1;
            if (s < 0)
            {
                return; // a nested delivery ended (cannot happen: deliveries run one after another)
            }
            final long split = commit == 0 ? end : commit;
            deliveries[s]++;
            before[s] += split - start;
            after[s] += end - split;
        }

        void reset()
        {
            Arrays.fill(deliveries, 0);
            Arrays.fill(before, 0);
            Arrays.fill(after, 0);
        }
    }

    /** One end of a loopback connection. */
    private static final class End implements Connection, WriteClaim.Committer
    {
        private final String localAddress;
        private final String remoteAddress;
        private final ArrayDeque<ByteBuffer> free = new ArrayDeque<>();
        /** 0 for the client's end, 1 for the server's: where {@link Phases} counts this end's deliveries. */
        private final int side;
        private End peer;
        private volatile ConnectionHandler handler;
        private volatile boolean closed;

        End(final String localAddress, final String remoteAddress, final int side)
        {
            this.localAddress = localAddress;
            this.remoteAddress = remoteAddress;
            this.side = side;
        }

        @Override
        public int tryClaim(final int length, final WriteClaim claim)
        {
            if (closed)
            {
                return ClaimResult.CLOSED;
            }
            ByteBuffer buffer;
            synchronized (free)
            {
                buffer = free.pollFirst();
            }
            if (buffer == null || buffer.capacity() < length)
            {
                buffer = ByteBuffer.allocateDirect(Math.max(length, 4096));
            }
            buffer.clear();
            claim.wrap(buffer, 0, length, this, 0);
            return ClaimResult.OK;
        }

        @Override
        public int commit(final WriteClaim claim)
        {
            if (closed)
            {
                return ClaimResult.CLOSED;
            }
            final ByteBuffer buffer = claim.buffer();
            buffer.limit(claim.offset() + claim.length()).position(claim.offset());
            final Phases p = phases;
            if (p != null)
            {
                p.committed();
            }
            DELIVERY.add(peer, buffer);
            return ClaimResult.OK;
        }

        @Override
        public void abort(final WriteClaim claim)
        {
            recycle(claim.buffer());
        }

        private void recycle(final ByteBuffer buffer)
        {
            synchronized (free)
            {
                free.addLast(buffer);
            }
        }

        /** On the delivering thread: a message from the peer (its buffer goes back to the peer afterwards). */
        void receive(final Object message)
        {
            if (message == CLOSE)
            {
                if (!closed)
                {
                    closed = true;
                    handler.onClose(this, null);
                }
                return;
            }
            final ByteBuffer buffer = (ByteBuffer)message;
            try
            {
                if (!closed)
                {
                    final Phases p = phases;
                    if (p != null)
                    {
                        p.receiving(side);
                    }
                    handler.onMessage(this, buffer);
                    handler.onReadComplete(this);
                    if (p != null)
                    {
                        p.received();
                    }
                }
            }
            finally
            {
                peer.recycle(buffer);
            }
        }

        @Override
        public int maxMessageLength()
        {
            return Integer.MAX_VALUE - 64;
        }

        @Override
        public boolean signalsReadComplete()
        {
            return true;
        }

        @Override
        public void close()
        {
            DELIVERY.add(peer, CLOSE);
            DELIVERY.add(this, CLOSE);
        }

        @Override
        public boolean isOpen()
        {
            return !closed;
        }

        @Override
        public String localAddress()
        {
            return localAddress;
        }

        @Override
        public String remoteAddress()
        {
            return remoteAddress;
        }

        @Override
        public String fabric()
        {
            return SCHEME;
        }

        @Override
        public ResourceUsage resourceUsage()
        {
            return ResourceUsage.NONE;
        }
    }
}
