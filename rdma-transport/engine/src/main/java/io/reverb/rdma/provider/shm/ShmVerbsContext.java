package io.reverb.rdma.provider.shm;

import io.reverb.common.LogLimiter;
import io.reverb.rdma.verbs.CompletionChannel;
import io.reverb.rdma.verbs.CompletionQueue;
import io.reverb.rdma.verbs.ConnectionListener;
import io.reverb.rdma.verbs.ConnectionRejectedException;
import io.reverb.rdma.verbs.ProtectionDomain;
import io.reverb.rdma.verbs.QueuePair;
import io.reverb.rdma.verbs.QueuePairAttributes;
import io.reverb.rdma.verbs.VerbsConfig;
import io.reverb.rdma.verbs.VerbsContext;
import io.reverb.rdma.verbs.VerbsProvider;
import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.UserPrincipal;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicInteger;
import org.agrona.BitUtil;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * An open shm "device".
 *
 * <h2>How the fabric works</h2>
 * <ul>
 *   <li>Every region, CQ and receive queue is a file in {@link VerbsConfig#shmDirectory()} named
 *       {@code r<random hex>-mr<index>}, {@code -cq<id>}, {@code -rq<qpNum>} (mode 0600, directory 0700,
 *       owned by this user: checked). The context holds an advisory lock on {@code r<random hex>-lock}
 *       while open; files whose lock nobody holds are deleted when a context opens or closes (see
 *       {@link ShmFiles}); a JVM shutdown hook removes the files of contexts still open at a clean exit.</li>
 *   <li>A QP executes its work requests synchronously inside {@code postSend}, on the caller's thread:
 *       it maps the peer's files and copies straight into (or out of) the peer's memory, after checking
 *       the peer region's header (key, bounds, access, PD) — the peer's CPU does nothing.</li>
 *   <li>Connection management is a Unix domain socket per connection ({@code <name>.sock} for
 *       listeners). After the handshake it carries doorbells for armed CQs; its EOF is the disconnect.
 *       The context's event thread watches all of them.</li>
 * </ul>
 */
final class ShmVerbsContext implements VerbsContext
{
    private static final Logger LOG = LoggerFactory.getLogger(ShmVerbsContext.class);
    /** The event thread's unexpected errors, of each class a burst and then a line per 10 s (it runs on). */
    private static final LogLimiter EVENT_THREAD_ERRORS = new LogLimiter((line, t) -> LOG.warn(line, t));
    private static final AtomicInteger CONTEXT_IDS = new AtomicInteger();
    private static final AtomicInteger QP_NUMS = new AtomicInteger(0x100);
    private static final Set<ShmVerbsContext> OPEN_CONTEXTS = ConcurrentHashMap.newKeySet();
    private static final SecureRandom RANDOM = new SecureRandom();

    static
    {
        // Clean exit (including System.exit and SIGTERM): remove the files of contexts left open.
        Runtime.getRuntime().addShutdownHook(new Thread(() ->
        {
            for (final ShmVerbsContext context : OPEN_CONTEXTS)
            {
                context.deleteFiles();
            }
        }, "reverb-shm-cleanup"));
    }

    private final ShmVerbsProvider provider;
    private final VerbsConfig config;
    private final Path directory;
    private final String prefix;
    private final UserPrincipal user;
    private final FileChannel lock;
    private final ShmEventLoop eventLoop;
    private final AtomicInteger nextRegionIndex = new AtomicInteger(1);
    private final AtomicInteger nextPdId = new AtomicInteger(1);
    private final AtomicInteger nextCqId = new AtomicInteger(1);
    private final Set<Path> files = ConcurrentHashMap.newKeySet();
    /** Open listeners, for the shutdown hook (which must not wait for this context's monitor). */
    private final Set<ShmConnectionListener> openListeners = ConcurrentHashMap.newKeySet();
    private final ConcurrentHashMap<Integer, ShmCompletionQueue> cqsById = new ConcurrentHashMap<>();
    private final List<ShmProtectionDomain> pds = new ArrayList<>();
    private final List<ShmCompletionChannel> channels = new ArrayList<>();
    private final List<ShmConnectionListener> listeners = new ArrayList<>();
    private final List<ShmQueuePair> qps = new ArrayList<>();
    /** Copy-on-write table of local regions by index: read on every post, written on (de)registration. */
    private volatile ShmMemoryRegion[] regions = new ShmMemoryRegion[16];
    private volatile boolean closed;

    ShmVerbsContext(final ShmVerbsProvider provider, final VerbsConfig config) throws IOException
    {
        this.provider = provider;
        this.config = config;
        this.directory = config.shmDirectory().toAbsolutePath();
        this.user = ShmFiles.ensureDirectory(directory);
        final int id = CONTEXT_IDS.incrementAndGet();
        // 64 random bits: unique across processes, PID namespaces and restarts, without asking anyone.
        this.prefix = ShmFiles.FILE_PREFIX + String.format("%016x", RANDOM.nextLong());
        final Path lockFile = directory.resolve(prefix + ShmFiles.LOCK_SUFFIX);
        this.lock = ShmFiles.createLock(lockFile);
        files.add(lockFile);
        OPEN_CONTEXTS.add(this);
        ShmFiles.deleteStaleFiles(directory, ownPrefixes());
        try
        {
            this.eventLoop = new ShmEventLoop(this, "reverb-shm-cm-" + id);
        }
        catch (final IOException | RuntimeException ex)
        {
            OPEN_CONTEXTS.remove(this);
            closeLock();
            throw ex;
        }
    }

    VerbsConfig config()
    {
        return config;
    }

    Path directory()
    {
        return directory;
    }

    String prefix()
    {
        return prefix;
    }

    /** @return this process's user, owner of the shm directory: the only peer shm:// accepts. */
    UserPrincipal directoryOwner()
    {
        return user;
    }

    /** @return whether a context of this JVM that is open has this prefix. */
    static boolean isOpenHere(final String prefix)
    {
        for (final ShmVerbsContext context : OPEN_CONTEXTS)
        {
            if (context.prefix.equals(prefix))
            {
                return true;
            }
        }
        return false;
    }

    private static Set<String> ownPrefixes()
    {
        final Set<String> prefixes = new HashSet<>();
        for (final ShmVerbsContext context : OPEN_CONTEXTS)
        {
            prefixes.add(context.prefix);
        }
        return prefixes;
    }

    private void closeLock()
    {
        try
        {
            lock.close();
        }
        catch (final IOException ignore)
        {
            // The lock goes with the channel in any case.
        }
        ShmFiles.deleteQuietly(directory.resolve(prefix + ShmFiles.LOCK_SUFFIX));
    }

    ShmEventLoop eventLoop()
    {
        return eventLoop;
    }

    void errorHandler(final Throwable ex)
    {
        EVENT_THREAD_ERRORS.log(ex.getClass().getName(), "shm provider: unexpected error on the event thread", ex);
    }

    @Override
    public VerbsProvider provider()
    {
        return provider;
    }

    @Override
    public ProtectionDomain allocPd() throws IOException
    {
        synchronized (this)
        {
            ensureOpen();
            final ShmProtectionDomain pd = new ShmProtectionDomain(this, nextPdId.getAndIncrement());
            pds.add(pd);
            return pd;
        }
    }

    @Override
    public CompletionChannel createCompletionChannel() throws IOException
    {
        synchronized (this)
        {
            ensureOpen();
            final ShmCompletionChannel channel = new ShmCompletionChannel(this, config.shmPollerDoorbells());
            channels.add(channel);
            return channel;
        }
    }

    @Override
    public CompletionQueue createCq(final int capacity, final CompletionChannel channel) throws IOException
    {
        if (capacity <= 0 || capacity > (1 << 24))
        {
            throw new IllegalArgumentException("capacity must be in 1..2^24: " + capacity);
        }
        if (channel != null && !(channel instanceof ShmCompletionChannel))
        {
            throw new IllegalArgumentException("channel was not created by the shm provider: " + channel);
        }
        synchronized (this)
        {
            ensureOpen();
            final int id = nextCqId.getAndIncrement();
            final int entries = BitUtil.findNextPositivePowerOfTwo(capacity);
            final Path file = newFile("cq" + id);
            final MappedByteBuffer mapping = ShmFiles.createAndMap(file, CqRing.LAYOUT.fileLength(entries));
            final ShmCompletionQueue cq = new ShmCompletionQueue(
                this, id, file, mapping, entries, (ShmCompletionChannel)channel);
            cqsById.put(id, cq);
            return cq;
        }
    }

    @Override
    public ConnectionListener listen(final String address, final int backlog) throws IOException
    {
        final String name = ShmAddress.name(address);
        synchronized (this)
        {
            ensureOpen();
            final ShmConnectionListener listener = new ShmConnectionListener(this, name, socketPath(name), backlog);
            listeners.add(listener);
            openListeners.add(listener);
            return listener;
        }
    }

    @Override
    public QueuePair connect(final String address, final QueuePairAttributes attributes, final ByteBuffer privateData)
        throws IOException
    {
        final String name = ShmAddress.name(address);
        final byte[] ourPrivateData = Handshake.copyPrivateData(privateData);
        final ShmQueuePair qp = createQp(attributes, "shm://" + name);
        final long deadline = System.nanoTime() + config.connectTimeoutNanos();
        final Path socketPath = socketPath(name);
        SocketChannel socket = null;
        boolean done = false;
        try
        {
            if (!Files.exists(socketPath))
            {
                throw new IOException("no shm listener named '" + name + "' in " + directory +
                    " (is the server started, with the same -D" + VerbsConfig.SHM_DIR_PROP + "?)");
            }
            socket = SocketChannel.open(StandardProtocolFamily.UNIX);
            try
            {
                socket.connect(UnixDomainSocketAddress.of(socketPath));
            }
            catch (final IOException ex)
            {
                throw new IOException("cannot connect to shm://" + name + " (" + socketPath + "): " + ex.getMessage(), ex);
            }
            // Not a byte to a listener of another user (one that took over a socket name would see our files).
            ShmPeers.checkSameUser(socket, user);
            final Handshake request = qp.describe(Handshake.REQUEST, ourPrivateData);
            request.write(socket);
            final Handshake reply = Handshake.read(socket, deadline);
            if (reply.type == Handshake.REJECT)
            {
                throw new ConnectionRejectedException("shm://" + name + " rejected the connection",
                    ByteBuffer.wrap(reply.privateData));
            }
            if (reply.type != Handshake.ACCEPT)
            {
                throw new IOException("unexpected shm handshake reply type " + reply.type);
            }
            qp.establish(reply, socket);
            done = true;
            return qp;
        }
        finally
        {
            if (!done)
            {
                if (socket != null)
                {
                    try
                    {
                        socket.close();
                    }
                    catch (final IOException ignore)
                    {
                        // Already failing.
                    }
                }
                qp.close();
            }
        }
    }

    /** Creates a QP and its receive queue file; it is connected by {@link ShmQueuePair#establish}. */
    ShmQueuePair createQp(final QueuePairAttributes attributes, final String remoteAddress) throws IOException
    {
        attributes.validate();
        if (!(attributes.pd() instanceof ShmProtectionDomain) || ((ShmProtectionDomain)attributes.pd()).shmContext() != this)
        {
            throw new IllegalArgumentException("the PD does not belong to this shm context");
        }
        checkCq(attributes.sendCq());
        checkCq(attributes.recvCq());
        synchronized (this)
        {
            ensureOpen();
            final int qpNum = QP_NUMS.incrementAndGet();
            final int entries = BitUtil.findNextPositivePowerOfTwo(attributes.maxRecvWr());
            final Path file = newFile("rq" + qpNum);
            final MappedByteBuffer mapping = ShmFiles.createAndMap(file, RecvRing.LAYOUT.fileLength(entries));
            final ShmQueuePair qp = new ShmQueuePair(this, qpNum, attributes, file, mapping, entries, remoteAddress);
            qps.add(qp);
            return qp;
        }
    }

    private void checkCq(final CompletionQueue cq)
    {
        if (!(cq instanceof ShmCompletionQueue) || ((ShmCompletionQueue)cq).shmContext() != this)
        {
            throw new IllegalArgumentException("the CQ does not belong to this shm context: " + cq);
        }
    }

    ShmMemoryRegion createRegion(final ShmProtectionDomain pd, final int length, final int access) throws IOException
    {
        ensureOpen();
        final int index = nextRegionIndex.getAndIncrement();
        if (index >= (1 << 23))
        {
            throw new IOException("too many memory registrations in one shm context");
        }
        final Path file = newFile("mr" + index);
        final MappedByteBuffer mapping = ShmFiles.createAndMap(file, (long)ShmMemoryRegion.DATA_OFFSET + length);
        final ShmMemoryRegion region = new ShmMemoryRegion(
            pd, index, ThreadLocalRandom.current().nextInt(), access, length, file, mapping);
        synchronized (this)
        {
            ShmMemoryRegion[] table = regions;
            if (index >= table.length)
            {
                final ShmMemoryRegion[] bigger = new ShmMemoryRegion[Math.max(table.length * 2, index + 1)];
                System.arraycopy(table, 0, bigger, 0, table.length);
                table = bigger;
            }
            else
            {
                table = table.clone();
            }
            table[index] = region;
            regions = table;
        }
        return region;
    }

    /** @return the live local region with this index, or null. Hot path: one volatile read. */
    ShmMemoryRegion region(final int index)
    {
        final ShmMemoryRegion[] table = regions;
        return index > 0 && index < table.length ? table[index] : null;
    }

    synchronized void deregistered(final ShmMemoryRegion region)
    {
        final ShmMemoryRegion[] table = regions.clone();
        if (region.index() < table.length && table[region.index()] == region)
        {
            table[region.index()] = null;
        }
        regions = table;
    }

    /** A doorbell for one of our CQs arrived from a peer (event thread). */
    void doorbell(final int cqId)
    {
        final ShmCompletionQueue cq = cqsById.get(cqId);
        if (cq != null)
        {
            cq.doorbell();
        }
    }

    Path socketPath(final String name)
    {
        return directory.resolve(name + ShmFiles.SOCKET_SUFFIX);
    }

    private Path newFile(final String suffix)
    {
        final Path file = directory.resolve(prefix + "-" + suffix);
        files.add(file);
        return file;
    }

    Path peerFile(final String name)
    {
        return directory.resolve(name);
    }

    void fileRemoved(final Path file)
    {
        files.remove(file);
    }

    synchronized void removed(final ShmProtectionDomain pd)
    {
        pds.remove(pd);
    }

    synchronized void removed(final ShmCompletionChannel channel)
    {
        channels.remove(channel);
    }

    synchronized void removed(final ShmCompletionQueue cq)
    {
        cqsById.remove(cq.id(), cq);
    }

    synchronized void removed(final ShmConnectionListener listener)
    {
        listeners.remove(listener);
        openListeners.remove(listener);
    }

    synchronized void removed(final ShmQueuePair qp)
    {
        qps.remove(qp);
    }

    private void ensureOpen() throws IOException
    {
        if (closed)
        {
            throw new IOException("shm context is closed");
        }
    }

    /** Shutdown hook: remove our files without touching mappings or threads. */
    private void deleteFiles()
    {
        for (final Path file : files)
        {
            ShmFiles.deleteQuietly(file);
        }
        for (final ShmConnectionListener listener : openListeners)
        {
            listener.deleteSocket();
        }
    }

    @Override
    public void close()
    {
        final List<ShmConnectionListener> listenersToClose;
        final List<ShmQueuePair> qpsToClose;
        final List<ShmCompletionQueue> cqsToClose;
        final List<ShmCompletionChannel> channelsToClose;
        final List<ShmProtectionDomain> pdsToClose;
        synchronized (this)
        {
            if (closed)
            {
                return;
            }
            closed = true;
            listenersToClose = new ArrayList<>(listeners);
            qpsToClose = new ArrayList<>(qps);
            cqsToClose = new ArrayList<>(cqsById.values());
            channelsToClose = new ArrayList<>(channels);
            pdsToClose = new ArrayList<>(pds);
        }
        // Order matters, as in ibverbs: QPs before the CQs and PDs they use.
        listenersToClose.forEach(ShmConnectionListener::close);
        qpsToClose.forEach(ShmQueuePair::close);
        cqsToClose.forEach(ShmCompletionQueue::close);
        channelsToClose.forEach(ShmCompletionChannel::close);
        pdsToClose.forEach(ShmProtectionDomain::close);
        eventLoop.close();
        OPEN_CONTEXTS.remove(this);
        // Data files first; the lock file last, so that no one judges our files stale before they are gone.
        files.remove(directory.resolve(prefix + ShmFiles.LOCK_SUFFIX));
        deleteFiles();
        files.clear();
        closeLock();
        ShmFiles.deleteStaleFiles(directory, ownPrefixes());
    }

    @Override
    public String toString()
    {
        return "ShmVerbsContext{" + prefix + " in " + directory + '}';
    }
}
