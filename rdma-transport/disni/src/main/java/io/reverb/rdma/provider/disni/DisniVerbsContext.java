package io.reverb.rdma.provider.disni;

import com.ibm.disni.verbs.IbvContext;
import com.ibm.disni.verbs.IbvQP;
import com.ibm.disni.verbs.IbvQPInitAttr;
import com.ibm.disni.verbs.RdmaCmId;
import com.ibm.disni.verbs.RdmaConnParam;
import com.ibm.disni.verbs.RdmaEventChannel;
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
import java.io.BufferedInputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketAddress;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * An open RDMA device and its rdma_cm event channel, through DiSNi.
 *
 * <p>DiSNi has no "open device" call: an {@link IbvContext} is what an rdma_cm id bound to an address of
 * the device returns. So the context binds an anchor id to a local IPv4 address of the device and keeps its
 * verbs context for every PD and CQ. Which device: the one of {@value DisniVerbsProvider#LOCAL_ADDRESS_PROP}
 * when set (bound when the context opens); otherwise the device of the first specific address the context
 * listens on, or, if a PD or CQ is needed first (a client), the first non-iWARP device with an up IPv4
 * address (see {@link RdmaDevices#defaultAddress}). A context serves one device: PDs, CQs and QPs of
 * different devices cannot be mixed (rdma_create_qp fails with EINVAL), so a listen address of another
 * device is refused with the fix, a wildcard listen accepts rdma_cm requests on the context's address only,
 * and a connection binds its rdma_cm id to the context's address before resolving the peer, so that the
 * route (and the device) is the context's. iWARP devices are refused ({@link RdmaDevices#IWARP_REASON}).
 *
 * <p>RNR: see {@link RnrRetry}. The count this side gives rdma_cm travels in the CM REQ/REP and
 * governs the <em>peer's</em> sends into this side's receive queue; the wait between retries is the
 * responder's {@code min_rnr_timer}, which the kernel's rdma_cm leaves at 0, i.e. 655.36 ms. A correct
 * engine never meets RNR (credits), so this only bounds how long a bug takes to surface.
 */
final class DisniVerbsContext implements VerbsContext
{
    private static final AtomicInteger CONTEXT_IDS = new AtomicInteger();
    private static final byte TRANSPORT_RETRY_COUNT = 7;
    /**
     * Inline sizes asked of rdma_create_qp, largest first (issue 24 part 2 item 6): small sends are then copied into
     * the work request at post time (no DMA read of the buffer by the NIC). 256 is what Soft-RoCE and mlx5 grant.
     */
    static final int[] INLINE_TRIES = {256, 128, 64};

    private final DisniVerbsProvider provider;
    private final VerbsConfig config;
    private final RdmaEventChannel eventChannel;
    private final CmEventDispatcher dispatcher;
    private final String name;
    private final Set<AutoCloseable> children = new LinkedHashSet<>();
    private final Set<DisniQueuePair> closing = new LinkedHashSet<>();
    private final Runnable closingTicker = this::finishExpiredCloses;
    private final Object deviceLock = new Object();
    private volatile RdmaCmId anchorId;
    private volatile IbvContext ibvContext;
    private volatile InetAddress localAddress;
    private volatile String deviceName;
    private volatile boolean closed;
    private final AtomicInteger cqsCreated = new AtomicInteger();
    private volatile int compVectors;

    DisniVerbsContext(
        final DisniVerbsProvider provider,
        final VerbsConfig config,
        final RdmaEventChannel eventChannel,
        final CmEventDispatcher dispatcher,
        final String name)
    {
        this.provider = provider;
        this.config = config;
        this.eventChannel = eventChannel;
        this.dispatcher = dispatcher;
        this.name = name;
    }

    static DisniVerbsContext open(final DisniVerbsProvider provider, final VerbsConfig config) throws IOException
    {
        final InetAddress configured = configuredLocalAddress(config.rdmaLocalAddress());
        final String name = "reverb-disni-" + CONTEXT_IDS.incrementAndGet();
        final RdmaEventChannel channel = RdmaEventChannel.createEventChannel();
        if (channel == null)
        {
            throw new IOException("rdma_create_event_channel failed");
        }
        final CmEventDispatcher dispatcher = new CmEventDispatcher(channel, name + "-cm");
        dispatcher.start();
        final DisniVerbsContext context = new DisniVerbsContext(provider, config, channel, dispatcher, name);
        dispatcher.addTicker(context.closingTicker);
        if (configured != null)
        {
            try
            {
                // Configured: open its device now, so that a wrong address fails here.
                context.bindDevice(configured);
            }
            catch (final IOException | RuntimeException ex)
            {
                context.close();
                throw ex;
            }
        }
        return context;
    }

    /**
     * Binds this context to a device, once: the device of {@code preferred}, or the default one.
     *
     * @param preferred a local IPv4 address, or null for "the configured or default address".
     * @return the context's local address (of its device).
     * @throws IOException if the address is on no (usable) RDMA device, or on another device than the one the
     *                     context already uses.
     */
    InetAddress bindDevice(final InetAddress preferred) throws IOException
    {
        synchronized (deviceLock)
        {
            if (ibvContext != null)
            {
                if (preferred != null && !preferred.equals(localAddress))
                {
                    checkSameDevice(preferred);
                }
                return localAddress;
            }
            final List<RdmaDevices.Device> devices = RdmaDevices.scan(DisniAvailability.SYSFS_INFINIBAND);
            final InetAddress local = preferred != null ? preferred :
                RdmaDevices.defaultAddress(devices, RdmaDevices.SYSTEM_INTERFACES);
            final RdmaDevices.Device device = RdmaDevices.deviceOf(devices, local, RdmaDevices.SYSTEM_INTERFACES);
            if (device != null && device.isIwarp())
            {
                throw new IOException(local.getHostAddress() + " is on RDMA device " + device.name() + ", which is " +
                    "iWARP (" + device.nodeTypeText() + "): " + RdmaDevices.IWARP_REASON);
            }
            RdmaCmId anchor = null;
            try
            {
                anchor = dispatcher.createId();
                anchor.bindAddr(new InetSocketAddress(local, 0));
                final IbvContext verbs = anchor.getVerbs();
                if (verbs == null)
                {
                    throw new IOException(local.getHostAddress() + " is not the address of an RDMA interface " +
                        "(rdma_cm bound it without a device); set -D" + DisniVerbsProvider.LOCAL_ADDRESS_PROP +
                        " to the IPv4 address of an RDMA (IPoIB/RoCE) interface");
                }
                anchorId = anchor;
                localAddress = local;
                deviceName = device == null ? "?" : device.name();
                ibvContext = verbs;
                return local;
            }
            catch (final IOException | RuntimeException ex)
            {
                if (anchor != null)
                {
                    dispatcher.destroyId(anchor);
                }
                throw ex instanceof IOException ? (IOException)ex :
                    new IOException("opening DiSNi on " + local.getHostAddress() + " failed: " + ex, ex);
            }
        }
    }

    private void checkSameDevice(final InetAddress other) throws IOException
    {
        final List<RdmaDevices.Device> devices = RdmaDevices.scan(DisniAvailability.SYSFS_INFINIBAND);
        final RdmaDevices.Device device = RdmaDevices.deviceOf(devices, other, RdmaDevices.SYSTEM_INTERFACES);
        if (device != null && !device.name().equals(deviceName))
        {
            throw new IOException(other.getHostAddress() + " is an address of RDMA device " + device.name() +
                ", but this rdma:// context (engine) already uses device " + deviceName + " (" +
                localAddress.getHostAddress() + "): one context serves one device. Use one engine per device, " +
                "or set -D" + DisniVerbsProvider.LOCAL_ADDRESS_PROP + "=" + other.getHostAddress());
        }
    }

    private IbvContext device() throws IOException
    {
        final IbvContext verbs = ibvContext;
        if (verbs != null)
        {
            return verbs;
        }
        bindDevice(null);
        return ibvContext;
    }

    @Override
    public VerbsProvider provider()
    {
        return provider;
    }

    VerbsConfig config()
    {
        return config;
    }

    IbvContext ibvContext() throws IOException
    {
        return device();
    }

    CmEventDispatcher dispatcher()
    {
        return dispatcher;
    }

    RdmaEventChannel eventChannel()
    {
        return eventChannel;
    }

    /** @return the local address of the context's device (binding the default device if none yet). */
    InetAddress localAddress() throws IOException
    {
        device();
        return localAddress;
    }

    String name()
    {
        return name;
    }

    /**
     * Completion vectors are the device's interrupt lines: CQs are spread over them round-robin (issue 24 part 2
     * item 2), so that event-driven connections do not all interrupt one core. Vector 0 only if the device does not
     * say how many it has.
     *
     * @return the vector for the next CQ.
     */
    int nextCompVector() throws IOException
    {
        int vectors = compVectors;
        if (vectors == 0)
        {
            try
            {
                vectors = Math.max(1, device().getNumCompVectors());
            }
            catch (final IOException | RuntimeException ex)
            {
                vectors = 1;
            }
            compVectors = vectors;
        }
        return compVector(cqsCreated.getAndIncrement(), vectors);
    }

    /**
     * @param index   the CQ's number in this context.
     * @param vectors the device's completion vectors.
     * @return the vector of that CQ.
     */
    static int compVector(final int index, final int vectors)
    {
        return vectors <= 1 ? 0 : Math.floorMod(index, vectors);
    }

    @Override
    public ProtectionDomain allocPd() throws IOException
    {
        ensureOpen();
        return track(new DisniProtectionDomain(this, device().allocPd()));
    }

    @Override
    public CompletionChannel createCompletionChannel() throws IOException
    {
        ensureOpen();
        return track(new DisniCompletionChannel());
    }

    @Override
    public CompletionQueue createCq(final int capacity, final CompletionChannel channel) throws IOException
    {
        ensureOpen();
        if (capacity <= 0)
        {
            throw new IllegalArgumentException("capacity must be > 0: " + capacity);
        }
        if (channel != null && !(channel instanceof DisniCompletionChannel))
        {
            throw new IllegalArgumentException("channel was not created by a DiSNi context: " + channel);
        }
        if (channel != null && DisniCqShare.available())
        {
            // A poller's CQ: a share of the native CQs of its channel (one per direction), not a native CQ of its own.
            return track(new DisniSharedCompletionQueue(this, capacity, (DisniCompletionChannel)channel));
        }
        return track(DisniCompletionQueue.create(this, capacity, (DisniCompletionChannel)channel));
    }

    @Override
    public ConnectionListener listen(final String address, final int backlog) throws IOException
    {
        ensureOpen();
        final InetSocketAddress bind = DisniAddress.parse(address);
        // A specific address picks (or must match) the context's device; a wildcard takes the context's.
        final InetAddress rdmaCmAddress = bindDevice(bind.getAddress().isAnyLocalAddress() ? null : bind.getAddress());
        final InetAddress cmBind = bind.getAddress().isAnyLocalAddress() ? rdmaCmAddress : bind.getAddress();
        return track(DisniConnectionListener.open(this, bind, cmBind, backlog));
    }

    @Override
    public QueuePair connect(final String address, final QueuePairAttributes attributes, final ByteBuffer privateData)
        throws IOException
    {
        ensureOpen();
        attributes.validate();
        checkPrivateData(privateData);
        final InetSocketAddress target = DisniAddress.parse(address);
        final InetAddress local = bindDevice(null);
        final long deadline = System.nanoTime() + config.connectTimeoutNanos();

        try (Socket socket = new Socket())
        {
            socket.setTcpNoDelay(true);
            // From the device's address, as the rdma_cm id below: the listener checks that they agree.
            socket.bind(new InetSocketAddress(local, 0));
            socket.connect(target, millisUntil(deadline));
            final DataOutputStream out = new DataOutputStream(socket.getOutputStream());
            final DataInputStream in = new DataInputStream(new BufferedInputStream(new DeadlineInputStream(socket, deadline)));
            Handshake.writeRequest(out, privateData);
            out.flush();

            final Handshake.Message offer = Handshake.read(in);
            if (offer.type() != Handshake.OFFER)
            {
                throw new IOException("rdma://" + address + ": unexpected handshake frame " + offer.type() +
                    " (expected OFFER; a Reverb of another version?)");
            }
            final InetSocketAddress cmTarget = offer.rdmaCmAddress();
            final RdmaCmId id = dispatcher.createId();
            final CmEventDispatcher.Waiter waiter = new CmEventDispatcher.Waiter();
            dispatcher.register(id, waiter);
            DisniQueuePair qp = null;
            try
            {
                // DiSNi's resolveAddr ignores its source argument: binding first is what makes rdma_cm route
                // (and pick the device) from the context's address rather than from the routing table alone.
                id.bindAddr(new InetSocketAddress(local, 0));
                id.resolveAddr(null, cmTarget, millisUntil(deadline));
                waiter.await(CmEventDispatcher.ADDR_RESOLVED, deadline - System.nanoTime(), "resolving " + cmTarget +
                    " from " + local.getHostAddress());
                id.resolveRoute(millisUntil(deadline));
                waiter.await(CmEventDispatcher.ROUTE_RESOLVED, deadline - System.nanoTime(), "resolving route to " + cmTarget);

                qp = newQueuePair(id, attributes, null, DisniAddress.format(target));
                if (socket.getLocalSocketAddress() instanceof InetSocketAddress)
                {
                    // the listener names this end by this socket's address (its peer): this end's name, as on tcp://
                    qp.localAddress(DisniAddress.format((InetSocketAddress)socket.getLocalSocketAddress()));
                }

                final SocketAddress source = id.getSource();
                if (!(source instanceof InetSocketAddress))
                {
                    throw new IOException("rdma_cm gave no source address for " + cmTarget);
                }
                Handshake.writeSource(out, (InetSocketAddress)source);
                out.flush();
                // Before the answer: the listener claims this rdma_cm request before its engine decides.
                id.connect(connParam());

                final Handshake.Message answer = Handshake.read(in);
                if (answer.type() == Handshake.REJECT)
                {
                    throw new ConnectionRejectedException(
                        "rdma://" + address + " rejected the connection", answer.privateData());
                }
                if (answer.type() != Handshake.ACCEPT)
                {
                    throw new IOException("rdma://" + address + ": unexpected handshake frame " + answer.type());
                }
                qp.peerPrivateData(answer.privateData());
                waiter.await(CmEventDispatcher.ESTABLISHED, deadline - System.nanoTime(), "connecting to rdma://" + address);
                qp.established();
                waiter.handOver(qp);
                return track(qp);
            }
            catch (final IOException | RuntimeException ex)
            {
                if (qp != null)
                {
                    qp.close();
                }
                else
                {
                    dispatcher.destroyId(id);
                }
                throw ex;
            }
        }
        catch (final SocketTimeoutException ex)
        {
            throw new IOException("connecting to rdma://" + address + " timed out after " +
                TimeUnit.NANOSECONDS.toMillis(config.connectTimeoutNanos()) + " ms", ex);
        }
    }

    /**
     * Creates the QP on {@code id} and wraps it; if wrapping fails, the QP is destroyed (not leaked). The id
     * stays the caller's to destroy.
     */
    DisniQueuePair newQueuePair(
        final RdmaCmId id, final QueuePairAttributes attributes, final ByteBuffer remotePrivateData, final String remote)
        throws IOException
    {
        final CreatedQp created = createQp(id, attributes);
        return wrapQueuePair(() ->
        {
            try
            {
                id.destroyQP();
            }
            finally
            {
                ((DisniProtectionDomain)attributes.pd()).queuePairDestroyed();
            }
        },
            () -> new DisniQueuePair(this, id, created.qp(), attributes, remotePrivateData, remote, created.maxInline()));
    }

    /** Builds a queue pair object. */
    @FunctionalInterface
    interface QueuePairFactory<T>
    {
        /**
         * @return the wrapper.
         * @throws IOException if it cannot be built.
         */
        T create() throws IOException;
    }

    /**
     * @param destroyQp destroys the native QP.
     * @param factory   builds its wrapper.
     * @param <T>       wrapper type.
     * @return the wrapper; if building it throws, the native QP is destroyed first.
     * @throws IOException from the factory.
     */
    static <T> T wrapQueuePair(final Step destroyQp, final QueuePairFactory<T> factory) throws IOException
    {
        try
        {
            return factory.create();
        }
        catch (final IOException | RuntimeException ex)
        {
            quietly(destroyQp);
            throw ex;
        }
    }

    /**
     * @param qp        the native QP.
     * @param maxInline the {@code max_inline_data} it was created with: sends up to this many bytes go inline.
     */
    record CreatedQp(IbvQP qp, int maxInline)
    {
    }

    /**
     * @param requested the SPI's {@code maxInlineData} (a floor).
     * @return the inline sizes to ask rdma_create_qp for, largest first, ending with the requested one.
     */
    static int[] inlineCandidates(final int requested)
    {
        final List<Integer> sizes = new ArrayList<>();
        for (final int size : INLINE_TRIES)
        {
            if (size > requested)
            {
                sizes.add(size);
            }
        }
        sizes.add(requested);
        return sizes.stream().mapToInt(Integer::intValue).toArray();
    }

    /**
     * Creates the QP, asking for inline data: DiSNi reports neither the device's {@code max_inline_data} nor what
     * {@code ibv_create_qp} granted, and a device refuses (EINVAL) a QP asking for more than it has, so the sizes of
     * {@link #inlineCandidates} are tried in turn; the first the device accepts is the QP's inline limit.
     */
    CreatedQp createQp(final RdmaCmId id, final QueuePairAttributes attributes) throws IOException
    {
        IOException first = null;
        for (final int inline : inlineCandidates(attributes.maxInlineData()))
        {
            try
            {
                return new CreatedQp(createQp(id, attributes, inline), inline);
            }
            catch (final IOException ex)
            {
                if (first == null)
                {
                    first = ex;
                }
            }
        }
        throw new IOException(String.valueOf(first.getMessage()).trim() + " (did the connection resolve to a device " +
            "other than the context's, " + deviceName + " at " + localAddress.getHostAddress() + "? set -D" +
            DisniVerbsProvider.LOCAL_ADDRESS_PROP + "; or the QP attributes exceed the device's limits)", first);
    }

    private static IbvQP createQp(final RdmaCmId id, final QueuePairAttributes attributes, final int maxInline)
        throws IOException
    {
        final DisniProtectionDomain pd = (DisniProtectionDomain)attributes.pd();
        final IbvQPInitAttr init = new IbvQPInitAttr();
        init.cap().setMax_send_wr(attributes.maxSendWr());
        init.cap().setMax_recv_wr(attributes.maxRecvWr());
        // libdisni 2.1 always asks for 4 SGEs (its MAX_SGE, = ScatterGatherList.MAX_SGE); set them anyway.
        init.cap().setMax_send_sge(attributes.maxSge());
        init.cap().setMax_recv_sge(attributes.maxSge());
        init.cap().setMax_inline_data(maxInline);
        init.setQp_type(IbvQP.IBV_QPT_RC);
        init.setSend_cq(((DisniCq)attributes.sendCq()).nativeCq(true));
        init.setRecv_cq(((DisniCq)attributes.recvCq()).nativeCq(false));
        final IbvQP qp = id.createQP(pd.ibvPd(), init);
        if (qp == null)
        {
            throw new IOException("rdma_create_qp returned no QP");
        }
        pd.queuePairCreated();
        return qp;
    }

    RdmaConnParam connParam() throws IOException
    {
        final RdmaConnParam param = new RdmaConnParam();
        param.setRetry_count(TRANSPORT_RETRY_COUNT);
        param.setRnr_retry_count((byte)RnrRetry.count(config.rnrRetryNanos()));
        return param;
    }

    static void checkPrivateData(final ByteBuffer privateData)
    {
        if (privateData != null && privateData.remaining() > MAX_PRIVATE_DATA)
        {
            throw new IllegalArgumentException(
                "private data is " + privateData.remaining() + " bytes, at most " + MAX_PRIVATE_DATA + " allowed");
        }
    }

    static int millisUntil(final long deadlineNanos)
    {
        // At least 1 ms: 0 means "forever" to sockets, and a passed deadline then fails as a timeout.
        final long millis = TimeUnit.NANOSECONDS.toMillis(deadlineNanos - System.nanoTime());
        return (int)Math.max(1, Math.min(Integer.MAX_VALUE, millis));
    }

    <T extends AutoCloseable> T track(final T child)
    {
        synchronized (children)
        {
            if (closed)
            {
                quietly(child::close);
                throw new IllegalStateException("context closed");
            }
            children.add(child);
        }
        return child;
    }

    void untrack(final AutoCloseable child)
    {
        synchronized (children)
        {
            children.remove(child);
        }
    }

    private void ensureOpen() throws IOException
    {
        if (closed)
        {
            throw new IOException("DiSNi context " + name + " is closed");
        }
        final Throwable failure = dispatcher.failure();
        if (failure != null)
        {
            throw new IOException("DiSNi context " + name + ": rdma_cm event channel failed: " + failure, failure);
        }
    }

    /**
     * A closed QP whose rdma_cm id waits for its DISCONNECTED event (so that its disconnect handler runs on
     * the event, as on the peer) until {@code deadlineNanos}; the dispatcher then finishes it.
     *
     * @param qp the queue pair, already without its native QP.
     */
    void awaitDisconnectEvent(final DisniQueuePair qp)
    {
        synchronized (closing)
        {
            closing.add(qp);
        }
        if (dispatcher.isStopped())
        {
            finishCloses(Long.MAX_VALUE, true);
        }
    }

    /** @param qp finished (its id destroyed). */
    void closeFinished(final DisniQueuePair qp)
    {
        synchronized (closing)
        {
            closing.remove(qp);
        }
    }

    private void finishExpiredCloses()
    {
        finishCloses(System.nanoTime(), false);
    }

    private void finishCloses(final long nowNanos, final boolean all)
    {
        final List<DisniQueuePair> due = new ArrayList<>();
        synchronized (closing)
        {
            for (final DisniQueuePair qp : closing)
            {
                if (all || qp.closeDeadlinePassed(nowNanos))
                {
                    due.add(qp);
                }
            }
        }
        for (final DisniQueuePair qp : due)
        {
            qp.finishClose();
            // Also when the event finished it first (it may have come before the QP was added here).
            closeFinished(qp);
        }
    }

    /** @return QPs closed but not yet finished (for tests and diagnostics). */
    int closingCount()
    {
        synchronized (closing)
        {
            return closing.size();
        }
    }

    @Override
    public void close()
    {
        final List<AutoCloseable> toClose;
        synchronized (children)
        {
            if (closed)
            {
                return;
            }
            closed = true;
            toClose = new ArrayList<>(children);
            children.clear();
        }
        // Listeners and QPs first, then CQs and PDs: a CQ or PD still used by a QP cannot be destroyed.
        closeAll(toClose, DisniConnectionListener.class);
        closeAll(toClose, DisniQueuePair.class);
        final List<DisniCompletionQueue> cqs = new ArrayList<>();
        for (final AutoCloseable child : toClose)
        {
            if (child instanceof DisniCompletionQueue)
            {
                cqs.add((DisniCompletionQueue)child);
            }
        }
        closeAll(toClose, DisniCompletionQueue.class);
        // A CQ whose event pump was in its native wait is destroyed by the pump within a poll slice; a context's
        // close (not a poller's hot path) waits for that, so that nothing native outlives it.
        for (final DisniCompletionQueue cq : cqs)
        {
            cq.awaitDestroyed(DisniCompletionQueue.pumpExitMillis());
        }
        final List<DisniCompletionChannel> channels = new ArrayList<>();
        for (final AutoCloseable child : toClose)
        {
            if (child instanceof DisniCompletionChannel)
            {
                channels.add((DisniCompletionChannel)child);
            }
        }
        closeAll(toClose, DisniCompletionChannel.class);
        for (final DisniCompletionChannel channel : channels)
        {
            channel.closeShares();
        }
        for (final DisniCompletionChannel channel : channels)
        {
            channel.awaitSharesDestroyed(DisniCqShare.pumpExitMillis());
        }
        closeAll(toClose, AutoCloseable.class);
        dispatcher.stop();
        // QPs closed above wait on the dispatcher for their DISCONNECTED event; it has stopped: finish them here.
        finishCloses(Long.MAX_VALUE, true);
        final RdmaCmId anchor = anchorId;
        if (anchor != null)
        {
            dispatcher.destroyId(anchor);
        }
        if (dispatcher.isStopped())
        {
            quietly(eventChannel::destroyEventChannel);
        }
    }

    private static void closeAll(final List<AutoCloseable> list, final Class<?> type)
    {
        for (int i = 0; i < list.size(); i++)
        {
            final AutoCloseable child = list.get(i);
            if (child != null && type.isInstance(child))
            {
                quietly(child::close);
                list.set(i, null);
            }
        }
    }

    @Override
    public String toString()
    {
        final InetAddress local = localAddress;
        return "DisniVerbsContext{" + name + ", device=" + deviceName + ", local=" +
            (local == null ? "not bound yet" : local.getHostAddress()) + '}';
    }

    /** A close step that may throw. */
    @FunctionalInterface
    interface Step
    {
        /** @throws Exception anything; swallowed by {@link #quietly(Step)}. */
        void run() throws Exception;
    }

    /**
     * Runs a tear-down step, ignoring failure: tear-down continues past a resource that is already gone.
     *
     * @param step the step.
     */
    static void quietly(final Step step)
    {
        try
        {
            step.run();
        }
        catch (final Exception ex)
        {
            // tear-down: nothing useful to do
        }
    }

    /**
     * @param configured {@link VerbsConfig#rdmaLocalAddress()} (default {@value DisniVerbsProvider#LOCAL_ADDRESS_PROP}),
     *                   or null.
     * @return it as an address, or null if unset.
     * @throws IOException if it is not an address.
     */
    static InetAddress configuredLocalAddress(final String configured) throws IOException
    {
        if (configured != null && !configured.isBlank())
        {
            return DisniAddress.parse(configured.trim() + ":0").getAddress();
        }
        return null;
    }

    /**
     * The address a context uses when nothing picks one: the configured one, else the first IPv4 address of
     * an up network interface of the first non-iWARP RDMA device (sysfs: {@code ports/N/gid_attrs/ndevs/*},
     * {@code parent} for rxe/siw, {@code device/net/*}).
     */
    static InetAddress findLocalAddress(final VerbsConfig config) throws IOException
    {
        final InetAddress configured = configuredLocalAddress(config.rdmaLocalAddress());
        if (configured != null)
        {
            return configured;
        }
        return RdmaDevices.defaultAddress(RdmaDevices.scan(DisniAvailability.SYSFS_INFINIBAND), RdmaDevices.SYSTEM_INTERFACES);
    }

    /**
     * @param device {@code /sys/class/infiniband/<dev>}.
     * @return names of its network interfaces, RoCE GID table first, then rxe/siw's parent, then PCI.
     */
    static List<String> netdevsOf(final Path device)
    {
        final Set<String> names = new LinkedHashSet<>();
        try (DirectoryStream<Path> ports = Files.newDirectoryStream(device.resolve("ports")))
        {
            for (final Path port : ports)
            {
                final Path ndevs = port.resolve("gid_attrs").resolve("ndevs");
                if (Files.isDirectory(ndevs))
                {
                    try (DirectoryStream<Path> entries = Files.newDirectoryStream(ndevs))
                    {
                        for (final Path entry : entries)
                        {
                            readName(entry, names);
                        }
                    }
                    catch (final IOException ex)
                    {
                        // unreadable entries (no GID at that index) are normal
                    }
                }
            }
        }
        catch (final IOException ex)
        {
            // no ports directory: try the other sources
        }
        readName(device.resolve("parent"), names);
        try (DirectoryStream<Path> nets = Files.newDirectoryStream(device.resolve("device").resolve("net")))
        {
            for (final Path net : nets)
            {
                names.add(net.getFileName().toString());
            }
        }
        catch (final IOException ex)
        {
            // not a PCI device (rxe, siw)
        }
        return new ArrayList<>(names);
    }

    private static void readName(final Path file, final Set<String> names)
    {
        try
        {
            final String name = new String(Files.readAllBytes(file)).trim();
            if (!name.isEmpty())
            {
                names.add(name);
            }
        }
        catch (final IOException | RuntimeException ex)
        {
            // absent or unreadable
        }
    }
}
