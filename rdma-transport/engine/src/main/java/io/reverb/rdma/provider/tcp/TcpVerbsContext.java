package io.reverb.rdma.provider.tcp;

import io.reverb.rdma.verbs.CompletionChannel;
import io.reverb.rdma.verbs.CompletionQueue;
import io.reverb.rdma.verbs.ConnectionListener;
import io.reverb.rdma.verbs.ConnectionRejectedException;
import io.reverb.rdma.verbs.PeerAuthenticationException;
import io.reverb.rdma.verbs.ProtectionDomain;
import io.reverb.rdma.verbs.QueuePair;
import io.reverb.rdma.verbs.QueuePairAttributes;
import io.reverb.rdma.verbs.TlsConfig;
import io.reverb.rdma.verbs.VerbsConfig;
import io.reverb.rdma.verbs.VerbsContext;
import io.reverb.rdma.verbs.VerbsProvider;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.SocketTimeoutException;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A tcp fabric "device": a NIC thread ({@link TcpNic}) with the sockets of this context's QPs, and
 * the table through which it finds registered memory ({@link #region(int)}).
 *
 * <p>Connection management runs on the caller's thread against a deadline ({@link TcpHandshake}), inside TLS when
 * the config has {@link VerbsConfig#tls()} ({@link TlsTcpStream});
 * once both sides agree, the socket is handed to the NIC thread. One socket per QP, so connections
 * to any host work, and one listener per {@link #listen} (port 0 picks a free port).
 */
final class TcpVerbsContext implements VerbsContext
{
    private static final AtomicInteger CONTEXTS = new AtomicInteger();
    private static final int MAX_REGION_INDEX = (1 << 23) - 1;
    /** Largest receive queue a QP may have (its ring is sized from it). */
    static final int MAX_RECV_WR = 1 << 20;

    private final TcpVerbsProvider provider;
    private final VerbsConfig config;
    private final TcpNic nic;
    private final boolean pollerReads;
    private volatile long pollerLeaseNanos = TcpQueuePair.POLLER_LEASE_NANOS;
    private final AtomicInteger regionIndexes = new AtomicInteger();
    private final AtomicInteger qpNums = new AtomicInteger();
    private final Object regionLock = new Object();
    private volatile TcpMemoryRegion[] regions = new TcpMemoryRegion[64];
    private final Set<AutoCloseable> resources = new LinkedHashSet<>();
    private volatile boolean closed;

    TcpVerbsContext(final TcpVerbsProvider provider, final VerbsConfig config) throws IOException
    {
        this.provider = provider;
        this.config = config;
        this.pollerReads = config.tcpPollerReads();
        this.nic = new TcpNic("reverb-tcp-nic-" + CONTEXTS.incrementAndGet(), config.tcpBusyPollNanos());
    }

    VerbsConfig config()
    {
        return config;
    }

    TcpNic nic()
    {
        return nic;
    }

    /**
     * @return whether pollers of receive CQs read their QPs' sockets ({@link VerbsConfig#tcpPollerReads()}; default
     *         true). It was opt-in for a while because of a ~100 ms unread-socket stall; the cause (a poller that arms
     *         its CQ without polling it kept the reading) is fixed and tested (TcpPollerReadsTest).
     */
    boolean pollerReads()
    {
        return pollerReads;
    }

    /** @return how long a poller may go without polling before the NIC reads its sockets again */
    long pollerLeaseNanos()
    {
        return pollerLeaseNanos;
    }

    /** Tests: a lease long enough that no descheduling of the test's polling thread ends it. */
    void pollerLeaseNanos(final long nanos)
    {
        pollerLeaseNanos = nanos;
    }

    @Override
    public VerbsProvider provider()
    {
        return provider;
    }

    // ------------------------------------------------------------------------------------------------
    // Registered memory table
    // ------------------------------------------------------------------------------------------------

    int nextRegionIndex() throws IOException
    {
        final int index = regionIndexes.incrementAndGet();
        if (index > MAX_REGION_INDEX)
        {
            throw new IOException("this tcp:// context has registered " + MAX_REGION_INDEX +
                " regions; open a new context");
        }
        return index;
    }

    /** @return the registered region with this index, or null. Any thread; no allocation. */
    TcpMemoryRegion region(final int index)
    {
        final TcpMemoryRegion[] table = regions;
        return index > 0 && index < table.length ? table[index] : null;
    }

    void registered(final TcpMemoryRegion region)
    {
        synchronized (regionLock)
        {
            TcpMemoryRegion[] table = regions;
            if (region.index() >= table.length)
            {
                table = Arrays.copyOf(table, Math.max(table.length * 2, region.index() + 1));
            }
            table[region.index()] = region;
            // Volatile write after the slot store: readers of the table see the region fully built.
            regions = table;
        }
    }

    void deregistered(final TcpMemoryRegion region)
    {
        synchronized (regionLock)
        {
            final TcpMemoryRegion[] table = regions;
            if (region.index() < table.length && table[region.index()] == region)
            {
                table[region.index()] = null;
            }
            regions = table;
        }
    }

    // ------------------------------------------------------------------------------------------------
    // Resources
    // ------------------------------------------------------------------------------------------------

    private <T extends AutoCloseable> T track(final T resource) throws IOException
    {
        synchronized (resources)
        {
            if (closed)
            {
                try
                {
                    resource.close();
                }
                catch (final Exception ignore)
                {
                    // Closing anyway.
                }
                throw new IOException("tcp:// context is closed");
            }
            resources.add(resource);
        }
        return resource;
    }

    void removed(final AutoCloseable resource)
    {
        synchronized (resources)
        {
            resources.remove(resource);
        }
    }

    private void ensureOpen() throws IOException
    {
        if (closed)
        {
            throw new IOException("tcp:// context is closed");
        }
    }

    @Override
    public ProtectionDomain allocPd() throws IOException
    {
        ensureOpen();
        return track(new TcpProtectionDomain(this));
    }

    @Override
    public CompletionChannel createCompletionChannel() throws IOException
    {
        ensureOpen();
        return track(new TcpCompletionChannel(this));
    }

    @Override
    public CompletionQueue createCq(final int capacity, final CompletionChannel channel) throws IOException
    {
        ensureOpen();
        if (channel != null && !(channel instanceof TcpCompletionChannel))
        {
            throw new IllegalArgumentException("channel does not belong to a tcp:// context: " + channel);
        }
        return track(new TcpCompletionQueue(this, capacity, (TcpCompletionChannel)channel));
    }

    @Override
    public ConnectionListener listen(final String address, final int backlog) throws IOException
    {
        ensureOpen();
        return track(new TcpConnectionListener(this, address, backlog));
    }

    @Override
    public QueuePair connect(final String address, final QueuePairAttributes attributes, final ByteBuffer privateData)
        throws IOException
    {
        ensureOpen();
        checkAttributes(attributes);
        final InetSocketAddress peer = TcpAddress.parse(address);
        if (peer.isUnresolved())
        {
            throw new IOException("cannot resolve host of tcp://" + address);
        }
        final TcpHandshake request = TcpHandshake.of(
            TcpHandshake.CONNECT, attributes.maxSendWr(), config.rnrRetryNanos(), privateData);
        final long deadline = System.nanoTime() + config.connectTimeoutNanos();
        final SocketChannel channel = SocketChannel.open();
        final TcpStream stream;
        try
        {
            channel.socket().connect(peer, timeoutMillis(deadline));
            configure(channel);
            channel.configureBlocking(false);
            final TlsConfig tls = config.tls();
            if (tls == null)
            {
                stream = TcpStream.plain(channel);
            }
            else
            {
                final TlsTcpStream session = TlsTcpStream.client(channel, tls, peer.getHostString(), peer.getPort());
                session.handshake(deadline);
                stream = session;
            }
            TcpStream.writeFully(stream, request.encode(), deadline);
            final TcpHandshake answer = TcpHandshake.read(stream, deadline);
            if (answer.type == TcpHandshake.REJECT)
            {
                throw new ConnectionRejectedException("tcp://" + address + " rejected the connection",
                    answer.privateDataBuffer());
            }
            if (answer.type == TcpHandshake.REFUSE)
            {
                throw new PeerAuthenticationException("tcp://" + address + " refused the connection: " +
                    new String(answer.privateData, StandardCharsets.US_ASCII), null);
            }
            if (answer.type != TcpHandshake.ACCEPT)
            {
                throw new IOException("tcp://" + address + " answered a connect with message type " + answer.type);
            }
            return start(attributes, stream, answer, address);
        }
        catch (final SocketTimeoutException ex)
        {
            closeQuietly(channel);
            throw new IOException("tcp://" + address + " did not accept within " +
                TimeUnit.NANOSECONDS.toMillis(config.connectTimeoutNanos()) + " ms", ex);
        }
        catch (final IOException | RuntimeException ex)
        {
            closeQuietly(channel);
            throw ex;
        }
    }

    /** Hands a connected, agreed socket to the NIC thread as a new QP in RTS. */
    TcpQueuePair start(
        final QueuePairAttributes attributes,
        final TcpStream channel,
        final TcpHandshake peer,
        final String remoteAddress) throws IOException
    {
        channel.channel().configureBlocking(false);
        // The handshake's stream is the QP's link: a TLS session keeps the bytes it read ahead during the handshake.
        final TcpLink link = channel instanceof TcpLink ? (TcpLink)channel : new TcpSocketLink(channel.channel());
        final TcpQueuePair qp = new TcpQueuePair(this, qpNums.incrementAndGet(), attributes, link, peer, remoteAddress);
        qp.socketAddresses((InetSocketAddress)channel.channel().getLocalAddress(),
            (InetSocketAddress)channel.channel().getRemoteAddress());
        track(qp);
        nic.register(qp);
        return qp;
    }

    void checkAttributes(final QueuePairAttributes attributes)
    {
        attributes.validate();
        if (attributes.maxSendWr() > TcpHandshake.MAX_PEER_SEND_WR || attributes.maxRecvWr() > MAX_RECV_WR)
        {
            throw new IllegalArgumentException("tcp:// queue depths are limited to maxSendWr <= " +
                TcpHandshake.MAX_PEER_SEND_WR + " and maxRecvWr <= " + MAX_RECV_WR + ": " + attributes.maxSendWr() +
                ", " + attributes.maxRecvWr());
        }
        if (!(attributes.pd() instanceof TcpProtectionDomain) || ((TcpProtectionDomain)attributes.pd()).tcpContext() != this)
        {
            throw new IllegalArgumentException("PD does not belong to this tcp:// context");
        }
        if (!(attributes.sendCq() instanceof TcpCompletionQueue) ||
            ((TcpCompletionQueue)attributes.sendCq()).tcpContext() != this ||
            !(attributes.recvCq() instanceof TcpCompletionQueue) ||
            ((TcpCompletionQueue)attributes.recvCq()).tcpContext() != this)
        {
            throw new IllegalArgumentException("CQs do not belong to this tcp:// context");
        }
    }

    static void configure(final SocketChannel channel) throws IOException
    {
        // Frames are staged and written in batches already; Nagle would only add latency.
        channel.setOption(StandardSocketOptions.TCP_NODELAY, true);
    }

    static int timeoutMillis(final long deadline) throws SocketTimeoutException
    {
        final long remaining = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
        if (remaining <= 0)
        {
            throw new SocketTimeoutException("connect timed out");
        }
        return (int)Math.min(Integer.MAX_VALUE, remaining);
    }

    static void closeQuietly(final AutoCloseable closeable)
    {
        try
        {
            closeable.close();
        }
        catch (final Exception ignore)
        {
            // Closing anyway.
        }
    }

    @Override
    public void close()
    {
        final List<AutoCloseable> open;
        synchronized (resources)
        {
            if (closed)
            {
                return;
            }
            closed = true;
            open = new ArrayList<>(resources);
        }
        // QPs and listeners first (they use the NIC, CQs and memory), then the NIC, then the rest.
        for (final AutoCloseable resource : open)
        {
            if (resource instanceof TcpQueuePair || resource instanceof TcpConnectionListener)
            {
                closeQuietly(resource);
            }
        }
        nic.close();
        for (final AutoCloseable resource : open)
        {
            closeQuietly(resource);
        }
        synchronized (resources)
        {
            resources.clear();
        }
    }

    @Override
    public String toString()
    {
        return "TcpVerbsContext{resources=" + resources.size() + '}';
    }
}
