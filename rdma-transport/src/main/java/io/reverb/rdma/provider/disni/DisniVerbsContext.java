package io.reverb.rdma.provider.disni;

import com.ibm.disni.verbs.IbvContext;
import com.ibm.disni.verbs.IbvQP;
import com.ibm.disni.verbs.IbvQPInitAttr;
import com.ibm.disni.verbs.RdmaCm;
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
import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.NetworkInterface;
import java.net.Socket;
import java.net.SocketAddress;
import java.nio.ByteBuffer;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Enumeration;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * An open RDMA device and its rdma_cm event channel, through DiSNi.
 *
 * <p>DiSNi has no "open device" call: an {@link IbvContext} is what an rdma_cm id bound to an address of
 * the device returns. So opening binds an anchor id to the local RDMA interface's IPv4 address
 * ({@value DisniVerbsProvider#LOCAL_ADDRESS_PROP}, or found through sysfs) and keeps its verbs context
 * for every PD and CQ. Connections are then made to and from addresses on that same device; librdmacm
 * opens each device once per process, so their ids share the context's native {@code ibv_context}.
 *
 * <p>RNR: rdma_cm's {@code rnr_retry_count} is set to 0 when {@link VerbsConfig#rnrRetryNanos()} is 0 and
 * to 6 otherwise (the largest finite count; 7 would retry forever). The RNR timer itself is chosen by
 * the kernel's rdma_cm, so on hardware the wait before RNR_RETRY_EXC_ERR is approximate. A correct engine
 * never meets RNR (credits), so this only bounds how long a bug takes to surface.
 */
final class DisniVerbsContext implements VerbsContext
{
    private static final AtomicInteger CONTEXT_IDS = new AtomicInteger();
    private static final byte TRANSPORT_RETRY_COUNT = 7;
    private static final byte RNR_RETRY_FINITE_MAX = 6;

    private final DisniVerbsProvider provider;
    private final VerbsConfig config;
    private final RdmaEventChannel eventChannel;
    private final CmEventDispatcher dispatcher;
    private final RdmaCmId anchorId;
    private final IbvContext ibvContext;
    private final InetAddress localAddress;
    private final String name;
    private final Set<AutoCloseable> children = new LinkedHashSet<>();
    private volatile boolean closed;

    private DisniVerbsContext(
        final DisniVerbsProvider provider,
        final VerbsConfig config,
        final RdmaEventChannel eventChannel,
        final CmEventDispatcher dispatcher,
        final RdmaCmId anchorId,
        final IbvContext ibvContext,
        final InetAddress localAddress,
        final String name)
    {
        this.provider = provider;
        this.config = config;
        this.eventChannel = eventChannel;
        this.dispatcher = dispatcher;
        this.anchorId = anchorId;
        this.ibvContext = ibvContext;
        this.localAddress = localAddress;
        this.name = name;
    }

    static DisniVerbsContext open(final DisniVerbsProvider provider, final VerbsConfig config) throws IOException
    {
        final InetAddress local = findLocalAddress();
        final String name = "reverb-disni-" + CONTEXT_IDS.incrementAndGet();
        final RdmaEventChannel channel = RdmaEventChannel.createEventChannel();
        if (channel == null)
        {
            throw new IOException("rdma_create_event_channel failed");
        }
        final CmEventDispatcher dispatcher = new CmEventDispatcher(channel, name + "-cm");
        RdmaCmId anchor = null;
        try
        {
            anchor = channel.createId(RdmaCm.RDMA_PS_TCP);
            anchor.bindAddr(new InetSocketAddress(local, 0));
            final IbvContext verbs = anchor.getVerbs();
            if (verbs == null)
            {
                throw new IOException(local.getHostAddress() + " is not the address of an RDMA interface " +
                    "(rdma_cm bound it without a device); set -D" + DisniVerbsProvider.LOCAL_ADDRESS_PROP +
                    " to the IPv4 address of an RDMA (IPoIB/RoCE/iWARP) interface");
            }
            dispatcher.start();
            return new DisniVerbsContext(provider, config, channel, dispatcher, anchor, verbs, local, name);
        }
        catch (final IOException | RuntimeException ex)
        {
            final RdmaCmId toDestroy = anchor;
            if (toDestroy != null)
            {
                quietly(toDestroy::destroyId);
            }
            dispatcher.stop();
            quietly(channel::destroyEventChannel);
            throw ex instanceof IOException ? (IOException)ex :
                new IOException("opening DiSNi on " + local.getHostAddress() + " failed: " + ex, ex);
        }
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

    IbvContext ibvContext()
    {
        return ibvContext;
    }

    CmEventDispatcher dispatcher()
    {
        return dispatcher;
    }

    RdmaEventChannel eventChannel()
    {
        return eventChannel;
    }

    InetAddress localAddress()
    {
        return localAddress;
    }

    String name()
    {
        return name;
    }

    @Override
    public ProtectionDomain allocPd() throws IOException
    {
        ensureOpen();
        return track(new DisniProtectionDomain(this, ibvContext.allocPd()));
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
        return track(DisniCompletionQueue.create(this, capacity, (DisniCompletionChannel)channel));
    }

    @Override
    public ConnectionListener listen(final String address, final int backlog) throws IOException
    {
        ensureOpen();
        return track(DisniConnectionListener.open(this, DisniAddress.parse(address), backlog));
    }

    @Override
    public QueuePair connect(final String address, final QueuePairAttributes attributes, final ByteBuffer privateData)
        throws IOException
    {
        ensureOpen();
        attributes.validate();
        checkPrivateData(privateData);
        final InetSocketAddress target = DisniAddress.parse(address);
        final long deadline = System.nanoTime() + config.connectTimeoutNanos();

        try (Socket socket = new Socket())
        {
            socket.setTcpNoDelay(true);
            socket.connect(target, millisUntil(deadline));
            socket.setSoTimeout(millisUntil(deadline));
            final DataOutputStream out = new DataOutputStream(socket.getOutputStream());
            final DataInputStream in = new DataInputStream(new BufferedInputStream(socket.getInputStream()));
            Handshake.writeRequest(out, privateData);
            out.flush();

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

            final InetSocketAddress cmTarget = new InetSocketAddress(target.getAddress(), answer.rdmaPort());
            final RdmaCmId id = eventChannel.createId(RdmaCm.RDMA_PS_TCP);
            final CmEventDispatcher.Waiter waiter = new CmEventDispatcher.Waiter();
            dispatcher.register(id, waiter);
            DisniQueuePair qp = null;
            try
            {
                id.resolveAddr(null, cmTarget, millisUntil(deadline));
                waiter.await(CmEventDispatcher.ADDR_RESOLVED, deadline - System.nanoTime(), "resolving " + cmTarget);
                id.resolveRoute(millisUntil(deadline));
                waiter.await(CmEventDispatcher.ROUTE_RESOLVED, deadline - System.nanoTime(), "resolving route to " + cmTarget);

                final IbvQP ibvQp = createQp(id, attributes);
                qp = new DisniQueuePair(this, id, ibvQp, attributes, answer.privateData(), DisniAddress.format(target));

                final SocketAddress source = id.getSource();
                if (!(source instanceof InetSocketAddress))
                {
                    throw new IOException("rdma_cm gave no source address for " + cmTarget);
                }
                Handshake.writeSource(out, (InetSocketAddress)source);
                out.flush();

                id.connect(connParam());
                waiter.await(CmEventDispatcher.ESTABLISHED, deadline - System.nanoTime(), "connecting to rdma://" + address);
                qp.established();
                waiter.handOver(qp);
                return track(qp);
            }
            catch (final IOException | RuntimeException ex)
            {
                dispatcher.unregister(id);
                if (qp != null)
                {
                    qp.close();
                }
                else
                {
                    quietly(id::destroyId);
                }
                throw ex;
            }
        }
        catch (final java.net.SocketTimeoutException ex)
        {
            throw new IOException("connecting to rdma://" + address + " timed out after " +
                TimeUnit.NANOSECONDS.toMillis(config.connectTimeoutNanos()) + " ms", ex);
        }
    }

    IbvQP createQp(final RdmaCmId id, final QueuePairAttributes attributes) throws IOException
    {
        final DisniProtectionDomain pd = (DisniProtectionDomain)attributes.pd();
        final IbvQPInitAttr init = new IbvQPInitAttr();
        init.cap().setMax_send_wr(attributes.maxSendWr());
        init.cap().setMax_recv_wr(attributes.maxRecvWr());
        // libdisni 2.1 always asks for 4 SGEs (its MAX_SGE, = ScatterGatherList.MAX_SGE); set them anyway.
        init.cap().setMax_send_sge(attributes.maxSge());
        init.cap().setMax_recv_sge(attributes.maxSge());
        init.cap().setMax_inline_data(attributes.maxInlineData());
        init.setQp_type(IbvQP.IBV_QPT_RC);
        init.setSend_cq(((DisniCompletionQueue)attributes.sendCq()).ibvCq());
        init.setRecv_cq(((DisniCompletionQueue)attributes.recvCq()).ibvCq());
        try
        {
            final IbvQP qp = id.createQP(pd.ibvPd(), init);
            if (qp == null)
            {
                throw new IOException("rdma_create_qp returned no QP");
            }
            return qp;
        }
        catch (final IOException ex)
        {
            throw new IOException(ex.getMessage().trim() + " (the connection resolved to a device other than the " +
                "context's, " + localAddress.getHostAddress() + "? set -D" + DisniVerbsProvider.LOCAL_ADDRESS_PROP +
                ", or the QP attributes exceed the device's limits)", ex);
        }
    }

    RdmaConnParam connParam() throws IOException
    {
        final RdmaConnParam param = new RdmaConnParam();
        param.setRetry_count(TRANSPORT_RETRY_COUNT);
        param.setRnr_retry_count(config.rnrRetryNanos() == 0 ? 0 : RNR_RETRY_FINITE_MAX);
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
        closeAll(toClose, DisniCompletionQueue.class);
        closeAll(toClose, DisniCompletionChannel.class);
        closeAll(toClose, AutoCloseable.class);
        dispatcher.stop();
        quietly(anchorId::destroyId);
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
        return "DisniVerbsContext{" + name + ", local=" + localAddress.getHostAddress() + '}';
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
     * The local RDMA interface address: the system property, else the first IPv4 address of the first
     * RDMA device's network interface (sysfs: {@code ports/N/gid_attrs/ndevs/*}, {@code parent} for
     * rxe/siw, {@code device/net/*}).
     */
    static InetAddress findLocalAddress() throws IOException
    {
        final String configured = System.getProperty(DisniVerbsProvider.LOCAL_ADDRESS_PROP);
        if (configured != null && !configured.isBlank())
        {
            return DisniAddress.parse(configured.trim() + ":0").getAddress();
        }
        final List<String> devices = DisniAvailability.listDevices(DisniAvailability.SYSFS_INFINIBAND);
        for (final String device : devices)
        {
            for (final String netdev : netdevsOf(DisniAvailability.SYSFS_INFINIBAND.resolve(device)))
            {
                final NetworkInterface ni = NetworkInterface.getByName(netdev);
                if (ni == null || !ni.isUp())
                {
                    continue;
                }
                final Enumeration<InetAddress> addresses = ni.getInetAddresses();
                while (addresses.hasMoreElements())
                {
                    final InetAddress address = addresses.nextElement();
                    if (address instanceof Inet4Address)
                    {
                        return address;
                    }
                }
            }
        }
        throw new IOException("no IPv4 address found on the network interface of RDMA device(s) " + devices +
            "; configure one (IPoIB, RoCE or iWARP netdev) or set -D" + DisniVerbsProvider.LOCAL_ADDRESS_PROP + "=<ipv4>");
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
