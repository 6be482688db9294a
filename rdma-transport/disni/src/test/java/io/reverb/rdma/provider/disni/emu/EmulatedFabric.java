package io.reverb.rdma.provider.disni.emu;

import com.ibm.disni.verbs.RdmaCmEvent;
import io.reverb.rdma.provider.disni.emu.EmuObjects.CmId;
import io.reverb.rdma.provider.disni.emu.EmuObjects.CmState;
import io.reverb.rdma.provider.disni.emu.EmuObjects.CompChannel;
import io.reverb.rdma.provider.disni.emu.EmuObjects.Cq;
import io.reverb.rdma.provider.disni.emu.EmuObjects.Device;
import io.reverb.rdma.provider.disni.emu.EmuObjects.EventChannel;
import io.reverb.rdma.provider.disni.emu.EmuObjects.Handled;
import io.reverb.rdma.provider.disni.emu.EmuObjects.Mr;
import io.reverb.rdma.provider.disni.emu.EmuObjects.Pd;
import io.reverb.rdma.provider.disni.emu.EmuObjects.Qp;
import io.reverb.rdma.provider.disni.emu.EmuObjects.QpState;
import java.io.IOException;
import java.util.ArrayDeque;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Iterator;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.agrona.UnsafeApi;

/**
 * An RDMA fabric inside one JVM: one emulated RC-capable device per loopback address (127.0.0.0/8: every
 * such address is a host with its own device), rdma_cm on top, and the verbs data path ({@link QpEngine}).
 * It answers what libdisni would answer over rdma-core 44 and an mlx5 device, including the errors: see
 * rdma-transport/RDMA-HARDWARE.md ("The emulated device") for what it models and what it cannot.
 *
 * <p>State is guarded by {@link #lock}; blocking waits (cm events, CQ events) wait outside it, and polling a CQ
 * takes only that CQ's monitor (lock order: fabric, then CQ).
 */
public final class EmulatedFabric
{
    private static final EmulatedFabric INSTANCE = new EmulatedFabric();
    /** rdma_connect's private data limit for RC (RDMA_MAX_PRIVATE_DATA less rdma_cm's header). */
    static final int MAX_CONNECT_PRIVATE_DATA = 56;
    static final int NUM_COMP_VECTORS = 8;
    static final int MAX_QP_WR = 16_384;
    static final int MAX_CQE = 4_194_303;
    static final int MAX_INLINE_DATA = 256;
    static final int RNR_TIMER_MS = 655;
    static final int INFINITE_RNR_RETRY = 7;
    /** System property: the most an rdma_cm event is delayed, in ms (0: delivered at once). */
    public static final String CM_JITTER_PROP = "reverb.disni.emulated.cmJitterMs";
    static final int DEFAULT_CM_JITTER_MS = 3;

    final Object lock = new Object();
    final NicClock nic = new NicClock();
    final QpEngine engine = new QpEngine(this);
    final ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor(r ->
    {
        final Thread thread = new Thread(r, "emulated-rdma-timer");
        thread.setDaemon(true);
        return thread;
    });
    private final AtomicLong nextHandle = new AtomicLong(0x7f00_0000_0000L);
    private final AtomicInteger nextQpn = new AtomicInteger(0x100);
    private final AtomicInteger nextKey = new AtomicInteger(1);
    private final AtomicInteger nextSmall = new AtomicInteger(1);
    private final Map<Long, Handled> objects = new ConcurrentHashMap<>();
    private final Map<Class<?>, ArrayDeque<Long>> freedHandles = new HashMap<>();
    private final Map<Integer, Device> devices = new HashMap<>();
    private final Map<Long, CmId> listeners = new HashMap<>();
    private final Map<Long, CmId> boundPorts = new HashMap<>();
    private int nextPort = 33_000;
    /** RC connections established (the active side's ESTABLISHED), for the suites' check that they ran over rdma. */
    private final AtomicLong established = new AtomicLong();
    private final int cmJitterMs = Integer.getInteger(CM_JITTER_PROP, DEFAULT_CM_JITTER_MS);

    private EmulatedFabric()
    {
    }

    /** @return the fabric of this JVM. */
    public static EmulatedFabric instance()
    {
        return INSTANCE;
    }

    // ---------------------------------------------------------------------------------------------------------
    // Handles
    // ---------------------------------------------------------------------------------------------------------

    /**
     * @param kind the object's type.
     * @return a handle for a new object. An rdma_cm id gets the handle of the id most recently destroyed if any:
     *         malloc hands a freed chunk of the same size back, so libdisni's id numbers (C pointers) are reused
     *         that way, and DiSNi's id table, keyed by them, must cope. Other objects get fresh handles, so that a
     *         call on a destroyed QP, CQ, PD or region is caught ({@link #get}) instead of reaching a new object.
     */
    long newHandle(final Class<? extends Handled> kind)
    {
        synchronized (freedHandles)
        {
            final ArrayDeque<Long> freed = freedHandles.get(kind);
            if (freed != null && !freed.isEmpty())
            {
                return freed.pop();
            }
        }
        return nextHandle.getAndAdd(0x40);
    }

    <T extends Handled> T register(final T object)
    {
        objects.put(object.handle, object);
        return object;
    }

    void unregister(final Handled object)
    {
        object.destroyed = true;
        objects.remove(object.handle);
        if (object instanceof CmId)
        {
            synchronized (freedHandles)
            {
                freedHandles.computeIfAbsent(object.getClass(), k -> new ArrayDeque<>()).push(object.handle);
            }
        }
    }

    /** Looks a handle up as libdisni dereferences a pointer; a stale or wrong handle is an error, not a crash. */
    <T extends Handled> T get(final long handle, final Class<T> type, final String what) throws IOException
    {
        final Handled object = objects.get(handle);
        if (!type.isInstance(object))
        {
            throw new IOException("emulated device: " + what + ": no live " + type.getSimpleName() + " at handle 0x" +
                Long.toHexString(handle) + " (use after destroy?)");
        }
        return type.cast(object);
    }

    <T extends Handled> T find(final long handle, final Class<T> type)
    {
        final Handled object = objects.get(handle);
        return type.isInstance(object) ? type.cast(object) : null;
    }

    int nextQpn()
    {
        return nextQpn.getAndIncrement() & 0xff_ffff;
    }

    /** @return a new memory key: an index in the upper 24 bits and a varying low byte, as mlx5's mkeys. */
    int nextKey()
    {
        final int index = nextKey.getAndIncrement();
        return (index << 8) | ((index * 37 + 0x5a) & 0xff);
    }

    int nextSmall()
    {
        return nextSmall.getAndIncrement();
    }

    /**
     * @return a count of the live objects by kind, e.g. {@code {CmId=0, Mr=0, ...}}: what tests check after
     *         closing every context (devices are not counted: they are the hardware).
     */
    public Map<String, Integer> liveObjects()
    {
        final Map<String, Integer> counts = new TreeMap<>();
        for (final String kind : Arrays.asList("EventChannel", "CmId", "Pd", "Mr", "CompChannel", "Cq", "Qp"))
        {
            counts.put(kind, 0);
        }
        for (final Handled object : objects.values())
        {
            if (!(object instanceof Device))
            {
                counts.merge(object.getClass().getSimpleName(), 1, Integer::sum);
            }
        }
        return counts;
    }

    /** @return RC connections established on this fabric so far (each counted once, when its RTU is sent). */
    public long connectionsEstablished()
    {
        return established.get();
    }

    /** @return bytes of every live memory region together (what a real device would pin). */
    public long registeredBytes()
    {
        long bytes = 0;
        for (final Handled object : objects.values())
        {
            if (object instanceof Mr)
            {
                bytes += ((Mr)object).length;
            }
        }
        return bytes;
    }

    /**
     * Fault injection for tests of timing: while the returned handle is open, the ACKs coming back to the QPs of
     * accepted connections (the passive side's requester completions) take {@code delayNanos} longer, as when the
     * return path is slow or an ACK is lost and the request retransmitted.
     *
     * @param delayNanos extra delay of each ACK.
     * @return closing it ends the delay (for requests executed from then on).
     */
    public AutoCloseable delayAcksToAcceptedSide(final long delayNanos)
    {
        engine.acceptedSideAckDelayNanos = delayNanos;
        return () -> engine.acceptedSideAckDelayNanos = 0;
    }

    /**
     * As {@link #delayAcksToAcceptedSide}, for the QPs of the connecting (active) side.
     *
     * @param delayNanos extra delay of each ACK.
     * @return closing it ends the delay (for requests executed from then on).
     */
    public AutoCloseable delayAcksToConnectingSide(final long delayNanos)
    {
        engine.connectingSideAckDelayNanos = delayNanos;
        return () -> engine.connectingSideAckDelayNanos = 0;
    }

    /**
     * Fault injection for the dead-peer path: every connected accepted (passive) id not yet vanished vanishes as its
     * process would under {@code kill -9}: from now on its QP answers no request and executes none of its own, and no
     * DREQ travels from or to it later. With {@code dreq} its kernel's cleanup sends one DREQ first (the peer gets
     * DISCONNECTED, as rdma_cm's destroy of a connected id does); without, that DREQ is lost (or the host lost power),
     * and the peers learn it only from their transport retries running out and from their own keep-alive. The
     * vanished side's objects stay until its owner destroys them (as a killed process's do until the kernel cleans up).
     *
     * @param dreq whether the vanished ids' peers get a DREQ (DISCONNECTED).
     * @return ids that vanished.
     */
    public int vanishAcceptedSides(final boolean dreq)
    {
        return vanish(true, dreq);
    }

    /**
     * As {@link #vanishAcceptedSides}, for every connected connecting (active) id: a client's process killed.
     *
     * @param dreq whether the vanished ids' peers get a DREQ (DISCONNECTED).
     * @return ids that vanished.
     */
    public int vanishConnectingSides(final boolean dreq)
    {
        return vanish(false, dreq);
    }

    private int vanish(final boolean accepted, final boolean dreq)
    {
        synchronized (lock)
        {
            int n = 0;
            for (final Handled object : objects.values())
            {
                if (object instanceof CmId && (((CmId)object).listener != null) == accepted &&
                    !((CmId)object).vanished && ((CmId)object).state == CmState.CONNECTED)
                {
                    final CmId id = (CmId)object;
                    id.vanished = true;
                    final CmId peer = id.peer;
                    if (dreq && peer != null && !peer.destroyed && peer.state == CmState.CONNECTED)
                    {
                        peer.state = CmState.DISCONNECTED;
                        post(peer, RdmaCmEvent.EventType.RDMA_CM_EVENT_DISCONNECTED, null);
                        if (peer.qp != null)
                        {
                            post(peer, RdmaCmEvent.EventType.RDMA_CM_EVENT_TIMEWAIT_EXIT, null);
                        }
                    }
                    n++;
                }
            }
            return n;
        }
    }

    // ---------------------------------------------------------------------------------------------------------
    // Devices and addresses
    // ---------------------------------------------------------------------------------------------------------

    /** @return the device of a loopback address (created on first use), or null (no RDMA device there). */
    Device deviceOf(final int ip)
    {
        if ((ip >>> 24) != 127)
        {
            return null;
        }
        return devices.computeIfAbsent(ip, a -> register(new Device(newHandle(Device.class), a,
            "emu_" + ((a >>> 16) & 0xff) + '_' + ((a >>> 8) & 0xff) + '_' + (a & 0xff), 1000 + devices.size())));
    }

    static String ipText(final int ip)
    {
        return (ip >>> 24) + "." + ((ip >>> 16) & 0xff) + '.' + ((ip >>> 8) & 0xff) + '.' + (ip & 0xff);
    }

    /** Reads a {@code struct sockaddr_in}: family in host order, port and address in network order. */
    static int[] readSockaddr(final long address) throws IOException
    {
        final short family = UnsafeApi.getShort(address);
        if (family != VerbsLayout.AF_INET)
        {
            throw new IOException("emulated device: address family " + family + " is not AF_INET");
        }
        final int port = ((UnsafeApi.getByte(address + VerbsLayout.SOCKADDR_IN_PORT) & 0xff) << 8) |
            (UnsafeApi.getByte(address + VerbsLayout.SOCKADDR_IN_PORT + 1) & 0xff);
        int ip = 0;
        for (int i = 0; i < 4; i++)
        {
            ip = (ip << 8) | (UnsafeApi.getByte(address + VerbsLayout.SOCKADDR_IN_ADDR + i) & 0xff);
        }
        return new int[] {ip, port};
    }

    static void writeSockaddr(final long address, final int ip, final int port)
    {
        UnsafeApi.setMemory(address, VerbsLayout.SOCKADDR_IN_SIZE, (byte)0);
        UnsafeApi.putShort(address, VerbsLayout.AF_INET);
        UnsafeApi.putByte(address + VerbsLayout.SOCKADDR_IN_PORT, (byte)(port >>> 8));
        UnsafeApi.putByte(address + VerbsLayout.SOCKADDR_IN_PORT + 1, (byte)port);
        for (int i = 0; i < 4; i++)
        {
            UnsafeApi.putByte(address + VerbsLayout.SOCKADDR_IN_ADDR + i, (byte)(ip >>> (24 - 8 * i)));
        }
    }

    private static long portKey(final int ip, final int port)
    {
        return ((ip & 0xffff_ffffL) << 16) | port;
    }

    // ---------------------------------------------------------------------------------------------------------
    // rdma_cm
    // ---------------------------------------------------------------------------------------------------------

    static int event(final RdmaCmEvent.EventType type)
    {
        return type.ordinal();
    }

    /**
     * Queues an rdma_cm event. Events reach their channel asynchronously, as from the kernel: after a random delay
     * of up to {@value #CM_JITTER_PROP} ms (default {@value #DEFAULT_CM_JITTER_MS}; 0 delivers at once), in order
     * per channel, so that both orders of an event and what the application does meanwhile (its side-channel
     * handshake, say) occur. An event whose id (or listener) is destroyed meanwhile is dropped, as the kernel
     * purges them; a connect request whose listener went away is rejected instead.
     */
    void post(final CmId id, final RdmaCmEvent.EventType type, final CmId listenId)
    {
        final long[] event = {event(type), listenId == null ? -1 : listenId.handle, id.handle};
        if (cmJitterMs <= 0)
        {
            deliver(id, listenId, event);
            return;
        }
        // Each timer task delivers the channel's oldest pending event, not its own: order holds whatever fires first.
        id.channel.pending.add(new Object[] {id, listenId, event});
        timer.schedule(() ->
        {
            synchronized (lock)
            {
                final Object[] next = id.channel.pending.poll();
                if (next != null)
                {
                    deliver((CmId)next[0], (CmId)next[1], (long[])next[2]);
                }
            }
        }, (long)(Math.random() * cmJitterMs * 1_000_000L), TimeUnit.NANOSECONDS);
    }

    private void deliver(final CmId id, final CmId listenId, final long[] event)
    {
        if (id.destroyed || id.channel.destroyed)
        {
            return;
        }
        if (listenId != null && listenId.destroyed)
        {
            destroyId(id);
            return;
        }
        id.channel.events.add(event);
    }

    EventChannel createEventChannel()
    {
        return register(new EventChannel(newHandle(EventChannel.class)));
    }

    int destroyEventChannel(final long handle)
    {
        synchronized (lock)
        {
            final EventChannel channel = find(handle, EventChannel.class);
            if (channel == null)
            {
                return -1;
            }
            if (channel.ids > 0)
            {
                // librdmacm: destroying a channel with ids on it is undefined (the ids keep a dangling pointer).
                return -VerbsLayout.EBUSY;
            }
            unregister(channel);
            return 0;
        }
    }

    CmId createId(final long channelHandle) throws IOException
    {
        synchronized (lock)
        {
            final EventChannel channel = get(channelHandle, EventChannel.class, "rdma_create_id");
            channel.ids++;
            return register(new CmId(newHandle(CmId.class), channel));
        }
    }

    void bindAddr(final long idHandle, final long sockaddr) throws IOException
    {
        final int[] address = readSockaddr(sockaddr);
        synchronized (lock)
        {
            final CmId id = get(idHandle, CmId.class, "rdma_bind_addr");
            if (id.bound)
            {
                throw new IOException("j2c::bind: rdma_bind_addr failed: Invalid argument\n");
            }
            bind(id, address[0], address[1]);
        }
    }

    private void bind(final CmId id, final int ip, final int port) throws IOException
    {
        int chosen = port;
        if (chosen == 0)
        {
            do
            {
                chosen = nextPort++;
                if (nextPort > 60_000)
                {
                    nextPort = 33_000;
                }
            }
            while (boundPorts.containsKey(portKey(ip, chosen)) || boundPorts.containsKey(portKey(0, chosen)));
        }
        else if (boundPorts.containsKey(portKey(ip, chosen)) || boundPorts.containsKey(portKey(0, chosen)) ||
            (ip == 0 && boundOnAnyAddress(chosen)))
        {
            throw new IOException("j2c::bind: rdma_bind_addr failed: Address already in use\n");
        }
        id.ip = ip;
        id.port = chosen;
        id.bound = true;
        id.device = deviceOf(ip);
        id.state = CmState.BOUND;
        boundPorts.put(portKey(ip, chosen), id);
    }

    private boolean boundOnAnyAddress(final int port)
    {
        for (final Long key : boundPorts.keySet())
        {
            if ((key & 0xffff) == port)
            {
                return true;
            }
        }
        return false;
    }

    void listen(final long idHandle, final int backlog) throws IOException
    {
        synchronized (lock)
        {
            final CmId id = get(idHandle, CmId.class, "rdma_listen");
            if (!id.bound || id.state != CmState.BOUND)
            {
                throw new IOException("j2c::listen: rdma_listen failed: Invalid argument\n");
            }
            id.state = CmState.LISTEN;
            id.backlog = backlog <= 0 ? 128 : backlog;
            listeners.put(portKey(id.ip, id.port), id);
        }
    }

    void resolveAddr(final long idHandle, final long dst) throws IOException
    {
        final int[] address = readSockaddr(dst);
        synchronized (lock)
        {
            final CmId id = get(idHandle, CmId.class, "rdma_resolve_addr");
            if (id.state != CmState.IDLE && id.state != CmState.BOUND)
            {
                throw new IOException("j2c::resolveAddr: rdma_resolve_addr failed: Invalid argument\n");
            }
            if (!id.bound)
            {
                // rdma_cm picks the source by route; on loopback that is the destination's own address.
                bind(id, address[0], 0);
            }
            id.dstIp = address[0];
            id.dstPort = address[1];
            if (deviceOf(address[0]) == null || id.device == null)
            {
                post(id, RdmaCmEvent.EventType.RDMA_CM_EVENT_ADDR_ERROR, null);
                return;
            }
            id.state = CmState.ADDR_RESOLVED;
            post(id, RdmaCmEvent.EventType.RDMA_CM_EVENT_ADDR_RESOLVED, null);
        }
    }

    void resolveRoute(final long idHandle) throws IOException
    {
        synchronized (lock)
        {
            final CmId id = get(idHandle, CmId.class, "rdma_resolve_route");
            if (id.state != CmState.ADDR_RESOLVED)
            {
                throw new IOException("j2c::resolveRoute: rdma_resolve_route failed: Invalid argument\n");
            }
            id.state = CmState.ROUTE_RESOLVED;
            post(id, RdmaCmEvent.EventType.RDMA_CM_EVENT_ROUTE_RESOLVED, null);
        }
    }

    void connect(final long idHandle, final int retry, final int rnrRetry, final long privateData, final int privateLength)
        throws IOException
    {
        synchronized (lock)
        {
            final CmId id = get(idHandle, CmId.class, "rdma_connect");
            final int length = privateLength & 0xff;
            if (id.state != CmState.ROUTE_RESOLVED || length > MAX_CONNECT_PRIVATE_DATA || (length > 0 && privateData == 0))
            {
                throw new IOException("j2c::connect: rdma_connect failed: Invalid argument\n");
            }
            final byte[] data = new byte[length];
            for (int i = 0; i < length; i++)
            {
                data[i] = UnsafeApi.getByte(privateData + i);
            }
            id.retry = retry;
            id.rnrRetry = rnrRetry;
            id.state = CmState.CONNECTING;
            CmId listener = listeners.get(portKey(id.dstIp, id.dstPort));
            if (listener == null)
            {
                listener = listeners.get(portKey(0, id.dstPort));
            }
            if (listener == null || pendingRequests(listener) >= listener.backlog)
            {
                // No listener: the passive side's CM answers the REQ with a REJ (invalid service id).
                id.state = CmState.ROUTE_RESOLVED;
                post(id, RdmaCmEvent.EventType.RDMA_CM_EVENT_REJECTED, null);
                return;
            }
            final CmId conn = register(new CmId(newHandle(CmId.class), listener.channel));
            listener.channel.ids++;
            conn.listener = listener;
            conn.bound = true;
            conn.ip = id.dstIp;
            conn.port = id.dstPort;
            conn.device = listener.device != null ? listener.device : deviceOf(id.dstIp);
            conn.dstIp = id.ip;
            conn.dstPort = id.port;
            conn.peer = id;
            conn.privateData = data;
            conn.state = CmState.REQ_RECEIVED;
            id.peer = conn;
            post(conn, RdmaCmEvent.EventType.RDMA_CM_EVENT_CONNECT_REQUEST, listener);
        }
    }

    private int pendingRequests(final CmId listener)
    {
        int pending = 0;
        for (final Handled object : objects.values())
        {
            if (object instanceof CmId && ((CmId)object).listener == listener && ((CmId)object).state == CmState.REQ_RECEIVED)
            {
                pending++;
            }
        }
        return pending;
    }

    void accept(final long idHandle, final int retry, final int rnrRetry) throws IOException
    {
        synchronized (lock)
        {
            final CmId conn = get(idHandle, CmId.class, "rdma_accept");
            final CmId active = conn.peer;
            if (conn.state != CmState.REQ_RECEIVED || conn.qp == null)
            {
                throw new IOException("j2c::accept: rdma_accept failed: Invalid argument\n");
            }
            if (active == null || active.destroyed || active.state != CmState.CONNECTING || active.qp == null)
            {
                // The active side went away (or has no QP): its CM never answers the REP.
                conn.state = CmState.DISCONNECTED;
                post(conn, RdmaCmEvent.EventType.RDMA_CM_EVENT_CONNECT_ERROR, null);
                return;
            }
            conn.retry = retry;
            conn.rnrRetry = rnrRetry;
            // Each side's RNR retry count travels in its REQ/REP and is set on the *peer's* QP; the REQ's retry
            // count is used by both.
            active.qp.rnrRetry = rnrRetry;
            conn.qp.rnrRetry = active.rnrRetry;
            active.qp.retry = active.retry;
            conn.qp.retry = active.retry;
            active.qp.remote = conn.qp;
            conn.qp.remote = active.qp;
            // librdmacm's rdma_accept takes the passive QP to RTR and RTS before it sends the REP; the active QP
            // stays in INIT until the active side's own event loop processes the REP (see retrieved()).
            if (conn.qp.state != QpState.ERROR)
            {
                conn.qp.state = QpState.RTS;
            }
            conn.state = CmState.REP_SENT;
            post(active, RdmaCmEvent.EventType.RDMA_CM_EVENT_CONNECT_RESPONSE, null);
        }
    }

    /**
     * An event leaves its channel through {@code rdma_get_cm_event}: what librdmacm does there. The REP
     * ({@code CONNECT_RESPONSE}) takes the active QP to RTR and RTS, sends the RTU (ESTABLISHED at the passive side)
     * and is reported as ESTABLISHED; one whose connection went away meanwhile is dropped.
     *
     * @return the event as the application sees it, or null when it is dropped.
     */
    long[] retrieved(final long[] event)
    {
        if (event[0] != event(RdmaCmEvent.EventType.RDMA_CM_EVENT_CONNECT_RESPONSE))
        {
            return event;
        }
        synchronized (lock)
        {
            final CmId active = find(event[2], CmId.class);
            if (active == null || active.state != CmState.CONNECTING || active.peer == null || active.peer.destroyed ||
                active.peer.state != CmState.REP_SENT)
            {
                return null;
            }
            final CmId conn = active.peer;
            if (active.qp != null && active.qp.state != QpState.ERROR)
            {
                active.qp.state = QpState.RTS;
            }
            active.state = CmState.CONNECTED;
            conn.state = CmState.CONNECTED;
            post(conn, RdmaCmEvent.EventType.RDMA_CM_EVENT_ESTABLISHED, null);
            established.incrementAndGet();
            return new long[] {event(RdmaCmEvent.EventType.RDMA_CM_EVENT_ESTABLISHED), event[1], event[2]};
        }
    }

    int disconnect(final long idHandle) throws IOException
    {
        synchronized (lock)
        {
            final CmId id = get(idHandle, CmId.class, "rdma_disconnect");
            return disconnect(id);
        }
    }

    private int disconnect(final CmId id)
    {
        if (id.state == CmState.CONNECTED)
        {
            if (id.qp != null)
            {
                engine.toError(id.qp);
            }
            id.state = CmState.DISCONNECTED;
            post(id, RdmaCmEvent.EventType.RDMA_CM_EVENT_DISCONNECTED, null);
            final CmId peer = id.peer;
            // A DREQ from or to a vanished host is lost: the other side learns nothing from its CM.
            if (peer != null && !peer.destroyed && peer.state == CmState.CONNECTED && !id.vanished && !peer.vanished)
            {
                // The peer's CM gets the DREQ: DISCONNECTED there; its QP stays as it is until it disconnects.
                peer.state = CmState.DISCONNECTED;
                post(peer, RdmaCmEvent.EventType.RDMA_CM_EVENT_DISCONNECTED, null);
                if (peer.qp != null)
                {
                    post(peer, RdmaCmEvent.EventType.RDMA_CM_EVENT_TIMEWAIT_EXIT, null);
                }
            }
            if (id.qp != null)
            {
                post(id, RdmaCmEvent.EventType.RDMA_CM_EVENT_TIMEWAIT_EXIT, null);
            }
            return 0;
        }
        if (id.state == CmState.DISCONNECTED)
        {
            // The peer disconnected first: rdma_disconnect moves the QP to ERROR and answers with a DREP.
            if (id.qp != null)
            {
                engine.toError(id.qp);
            }
            return 0;
        }
        return -1;
    }

    int destroyId(final long idHandle)
    {
        synchronized (lock)
        {
            final CmId id = find(idHandle, CmId.class);
            if (id == null)
            {
                return -1;
            }
            destroyId(id);
            return 0;
        }
    }

    private void destroyId(final CmId id)
    {
        if (id.state == CmState.CONNECTED)
        {
            disconnect(id);
        }
        else if (id.state == CmState.REQ_RECEIVED && id.peer != null && !id.peer.destroyed &&
            id.peer.state == CmState.CONNECTING)
        {
            // Destroying a request not accepted sends a REJ.
            id.peer.state = CmState.ROUTE_RESOLVED;
            post(id.peer, RdmaCmEvent.EventType.RDMA_CM_EVENT_REJECTED, null);
        }
        else if (id.state == CmState.REP_SENT && id.peer != null && !id.peer.destroyed &&
            id.peer.state == CmState.CONNECTING)
        {
            // Destroying an accepted id before the RTU sends a REJ: the active side's REP is dropped.
            id.peer.state = CmState.ROUTE_RESOLVED;
            id.peer.peer = null;
            post(id.peer, RdmaCmEvent.EventType.RDMA_CM_EVENT_REJECTED, null);
        }
        else if (id.state == CmState.CONNECTING && id.peer != null && !id.peer.destroyed)
        {
            if (id.peer.state == CmState.REP_SENT)
            {
                // The active side gives up after the REP came: its CM answers with a REJ.
                id.peer.state = CmState.DISCONNECTED;
                if (id.peer.qp != null)
                {
                    engine.toError(id.peer.qp);
                }
                post(id.peer, RdmaCmEvent.EventType.RDMA_CM_EVENT_REJECTED, null);
            }
            id.peer.peer = null;
        }
        if (id.state == CmState.LISTEN)
        {
            listeners.remove(portKey(id.ip, id.port));
            // Requests not yet retrieved from the channel die with their listener (the kernel rejects them).
            final Iterator<long[]> queued = id.channel.events.iterator();
            while (queued.hasNext())
            {
                final long[] event = queued.next();
                if (event[1] == id.handle)
                {
                    queued.remove();
                    final CmId conn = find(event[2], CmId.class);
                    if (conn != null)
                    {
                        destroyId(conn);
                    }
                }
            }
        }
        if (id.bound && boundPorts.get(portKey(id.ip, id.port)) == id)
        {
            boundPorts.remove(portKey(id.ip, id.port));
        }
        if (id.qp != null)
        {
            // librdmacm leaves a QP the user did not destroy; so does the emulation (it stays counted as live).
            id.qp.remote = null;
        }
        id.channel.events.removeIf(event -> event[2] == id.handle);
        id.channel.ids--;
        unregister(id);
    }

    // ---------------------------------------------------------------------------------------------------------
    // Verbs objects
    // ---------------------------------------------------------------------------------------------------------

    Pd allocPd(final long contextHandle) throws IOException
    {
        synchronized (lock)
        {
            final Device device = get(contextHandle, Device.class, "ibv_alloc_pd");
            return register(new Pd(newHandle(Pd.class), device, nextSmall()));
        }
    }

    int deallocPd(final long handle)
    {
        synchronized (lock)
        {
            final Pd pd = find(handle, Pd.class);
            if (pd == null)
            {
                return -1;
            }
            if (pd.mrs > 0 || pd.qps > 0)
            {
                return VerbsLayout.EBUSY;
            }
            unregister(pd);
            return 0;
        }
    }

    Mr regMr(final long pdHandle, final long address, final int length, final int access) throws IOException
    {
        synchronized (lock)
        {
            final Pd pd = get(pdHandle, Pd.class, "ibv_reg_mr");
            final int remoteWriteOrAtomicBits = VerbsLayout.ACCESS_REMOTE_WRITE | VerbsLayout.ACCESS_REMOTE_ATOMIC;
            final boolean remoteWriteOrAtomic = (access & remoteWriteOrAtomicBits) != 0;
            if (length < 0 || address == 0 || (remoteWriteOrAtomic && (access & VerbsLayout.ACCESS_LOCAL_WRITE) == 0) ||
                (access & ~0xf) != 0)
            {
                throw new IOException("j2c::regMr: ibv_reg_mr failed: Invalid argument\n");
            }
            final Mr mr = register(new Mr(newHandle(Mr.class), pd, address, length, access, nextKey()));
            pd.mrs++;
            pd.device.mrs.put(mr.key, mr);
            return mr;
        }
    }

    void deregMr(final long handle) throws IOException
    {
        synchronized (lock)
        {
            final Mr mr = find(handle, Mr.class);
            if (mr == null)
            {
                throw new IOException("j2c::deregMr:  ibv_dereg_failed, error: Invalid argument\n");
            }
            mr.pd.device.mrs.remove(mr.key);
            mr.pd.mrs--;
            unregister(mr);
        }
    }

    CompChannel createCompChannel(final long contextHandle) throws IOException
    {
        synchronized (lock)
        {
            return register(new CompChannel(newHandle(CompChannel.class), get(contextHandle, Device.class,
                "ibv_create_comp_channel")));
        }
    }

    int destroyCompChannel(final long handle)
    {
        synchronized (lock)
        {
            final CompChannel channel = find(handle, CompChannel.class);
            if (channel == null)
            {
                return -1;
            }
            if (channel.cqs > 0)
            {
                return VerbsLayout.EBUSY;
            }
            unregister(channel);
            return 0;
        }
    }

    Cq createCq(final long contextHandle, final long channelHandle, final int ncqe, final int compVector) throws IOException
    {
        synchronized (lock)
        {
            final Device device = get(contextHandle, Device.class, "ibv_create_cq");
            final CompChannel channel = get(channelHandle, CompChannel.class, "ibv_create_cq");
            if (ncqe < 1 || ncqe > MAX_CQE || compVector < 0 || compVector >= NUM_COMP_VECTORS || channel.device != device)
            {
                throw new IOException("j2c::createCQ: ibv_create_cq failed: Invalid argument\n");
            }
            // mlx5 rounds the queue up to a power of two and keeps one entry free.
            int size = Integer.highestOneBit(ncqe + 1);
            if (size < ncqe + 1)
            {
                size <<= 1;
            }
            final int capacity = size - 1;
            channel.cqs++;
            return register(new Cq(newHandle(Cq.class), device, channel, capacity));
        }
    }

    int destroyCq(final long handle)
    {
        synchronized (lock)
        {
            final Cq cq = find(handle, Cq.class);
            if (cq == null)
            {
                return -1;
            }
            synchronized (cq)
            {
                if (!cq.qps.isEmpty())
                {
                    return VerbsLayout.EBUSY;
                }
                if (cq.unackedEvents > 0)
                {
                    // libibverbs would block here forever, waiting for ibv_ack_cq_events: report it instead.
                    return VerbsLayout.EBUSY;
                }
                cq.channel.events.removeIf(queued -> queued == cq);
                cq.channel.cqs--;
                unregister(cq);
            }
            return 0;
        }
    }

    Qp createQp(final long idHandle, final long pdHandle, final long sendCqHandle, final long recvCqHandle, final int qpType,
        final int maxSendWr, final int maxRecvWr, final int maxInline) throws IOException
    {
        synchronized (lock)
        {
            final CmId id = get(idHandle, CmId.class, "rdma_create_qp");
            final Pd pd = get(pdHandle, Pd.class, "rdma_create_qp");
            final Cq sendCq = get(sendCqHandle, Cq.class, "rdma_create_qp");
            final Cq recvCq = get(recvCqHandle, Cq.class, "rdma_create_qp");
            if (id.qp != null || id.device == null || pd.device != id.device || sendCq.device != id.device ||
                recvCq.device != id.device || qpType != VerbsLayout.QPT_RC || maxSendWr < 1 || maxSendWr > MAX_QP_WR ||
                maxRecvWr < 1 || maxRecvWr > MAX_QP_WR || maxInline < 0 || maxInline > MAX_INLINE_DATA)
            {
                throw new IOException("j2c::createQP: rdma_create_qp failed: Invalid argument\n");
            }
            final Qp qp = register(new Qp(newHandle(Qp.class), nextQpn(), id, pd, sendCq, recvCq, maxSendWr, maxRecvWr,
                maxInline));
            pd.qps++;
            synchronized (sendCq)
            {
                sendCq.qps.add(qp);
            }
            synchronized (recvCq)
            {
                recvCq.qps.add(qp);
            }
            id.qp = qp;
            return qp;
        }
    }

    int destroyQp(final long idHandle)
    {
        synchronized (lock)
        {
            final CmId id = find(idHandle, CmId.class);
            if (id == null || id.qp == null)
            {
                return -1;
            }
            final Qp qp = id.qp;
            id.qp = null;
            qp.state = QpState.ERROR;
            engine.discard(qp);
            qp.remote = null;
            qp.pd.qps--;
            synchronized (qp.sendCq)
            {
                qp.sendCq.qps.remove(qp);
            }
            synchronized (qp.recvCq)
            {
                qp.recvCq.qps.remove(qp);
            }
            unregister(qp);
            return 0;
        }
    }
}
