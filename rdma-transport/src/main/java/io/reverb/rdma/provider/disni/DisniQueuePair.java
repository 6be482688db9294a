package io.reverb.rdma.provider.disni;

import com.ibm.disni.verbs.IbvQP;
import com.ibm.disni.verbs.IbvRecvWR;
import com.ibm.disni.verbs.IbvSendWR;
import com.ibm.disni.verbs.RdmaCmId;
import com.ibm.disni.verbs.SVCPostRecv;
import com.ibm.disni.verbs.SVCPostSend;
import io.reverb.rdma.verbs.CompletionQueue;
import io.reverb.rdma.verbs.PostResult;
import io.reverb.rdma.verbs.ProtectionDomain;
import io.reverb.rdma.verbs.QpState;
import io.reverb.rdma.verbs.QueuePair;
import io.reverb.rdma.verbs.QueuePairAttributes;
import io.reverb.rdma.verbs.RecvRequest;
import io.reverb.rdma.verbs.ScatterGatherList;
import io.reverb.rdma.verbs.SendRequest;
import io.reverb.rdma.verbs.WrOpcode;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.Collections;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.LockSupport;
import org.agrona.collections.Long2ObjectHashMap;

/**
 * An RC queue pair through DiSNi, posting with reused stateful verb calls.
 *
 * <h2>SVCPostSend handling</h2>
 * A DiSNi {@code SVCPostSend} serialises its work request to native memory once; afterwards only
 * {@code wr_id}, {@code send_flags}, the RDMA remote address and rkey, and each SGE's address, length and
 * lkey can be changed in place. Opcode, immediate and number of SGEs cannot. So this QP keeps:
 * <ul>
 *   <li>one prepared call per (opcode, SGE count) for the opcodes without immediate: at most 5 x 4, built
 *       on first use and then only modified in place, so SEND/RDMA_WRITE/RDMA_READ allocate nothing;</li>
 *   <li>for SEND_WITH_IMM and RDMA_WRITE_WITH_IMM, one prepared call per (opcode, SGE count, immediate) in a
 *       bounded map ({@value #IMM_CACHE_LIMIT} entries; when full it is freed and emptied). The engine's
 *       immediates are rendezvous ids drawn from a bounded pool, so they repeat and hit the map; a new one
 *       costs one call build (a small direct buffer), never a wrong immediate.</li>
 * </ul>
 *
 * <h2>SVCPostRecv handling</h2>
 * A DiSNi {@code SVCPostRecv} cannot be modified at all (not even {@code wr_id}). Receives are cached by
 * {@code wr_id} with the SGEs they were built for; re-posting the same slot (same id and SGEs: the engine's
 * pattern) reuses the call, anything else rebuilds that entry. Bounded like the immediate map.
 *
 * <p>Posting is serialised per direction (one lock for sends, one for receives) and against
 * {@link #close()}, so a post never reaches a destroyed QP.
 */
final class DisniQueuePair implements QueuePair, CmEventDispatcher.Handler
{
    static final int IMM_CACHE_LIMIT = 1024;
    static final int RECV_CACHE_MIN_LIMIT = 1024;
    private static final long DISCONNECT_EVENT_WAIT_NANOS = TimeUnit.MILLISECONDS.toNanos(200);

    private final DisniVerbsContext context;
    private final RdmaCmId cmId;
    private final IbvQP qp;
    private final int qpNum;
    private final DisniProtectionDomain pd;
    private final DisniCompletionQueue sendCq;
    private final DisniCompletionQueue recvCq;
    private final int maxSge;
    private final Runnable disconnectHandler;
    private final ByteBuffer remotePrivateData;
    private final String remoteAddress;

    private final Object sendLock = new Object();
    private final Object recvLock = new Object();
    private final PreparedSend[][] plainSends = new PreparedSend[WrOpcode.values().length][ScatterGatherList.MAX_SGE + 1];
    private final Long2ObjectHashMap<PreparedSend> immSends = new Long2ObjectHashMap<>();
    private final Long2ObjectHashMap<PreparedRecv> recvs = new Long2ObjectHashMap<>();
    private final int recvCacheLimit;

    private final AtomicBoolean disconnectRequested = new AtomicBoolean();
    private final AtomicBoolean handlerRan = new AtomicBoolean();
    private volatile boolean wasEstablished;
    private volatile QpState state = QpState.INIT;
    private volatile boolean open = true;

    DisniQueuePair(
        final DisniVerbsContext context,
        final RdmaCmId cmId,
        final IbvQP qp,
        final QueuePairAttributes attributes,
        final ByteBuffer remotePrivateData,
        final String remoteAddress) throws IOException
    {
        this.context = context;
        this.cmId = cmId;
        this.qp = qp;
        this.qpNum = qp.getQp_num();
        this.pd = (DisniProtectionDomain)attributes.pd();
        this.sendCq = (DisniCompletionQueue)attributes.sendCq();
        this.recvCq = (DisniCompletionQueue)attributes.recvCq();
        this.maxSge = attributes.maxSge();
        this.disconnectHandler = attributes.disconnectHandler();
        this.remotePrivateData = remotePrivateData == null ?
            ByteBuffer.allocate(0).asReadOnlyBuffer() : remotePrivateData.asReadOnlyBuffer();
        this.remoteAddress = remoteAddress;
        this.recvCacheLimit = Math.max(RECV_CACHE_MIN_LIMIT, 2 * attributes.maxRecvWr());
        sendCq.attach(this);
        if (recvCq != sendCq)
        {
            recvCq.attach(this);
        }
    }

    /** rdma_cm reported ESTABLISHED. */
    void established()
    {
        wasEstablished = true;
        if (state != QpState.ERROR)
        {
            state = QpState.RTS;
        }
    }

    /** An error completion was polled for this QP: the HCA moved it to ERROR. */
    void markError()
    {
        state = QpState.ERROR;
    }

    @Override
    public void onCmEvent(final int event, final RdmaCmId connId)
    {
        if (event == CmEventDispatcher.DISCONNECTED || event == CmEventDispatcher.DEVICE_REMOVAL)
        {
            // librdmacm moves the QP to ERROR on disconnect, so outstanding requests are being flushed.
            state = QpState.ERROR;
            runDisconnectHandler();
        }
    }

    private void runDisconnectHandler()
    {
        if (handlerRan.compareAndSet(false, true) && disconnectHandler != null)
        {
            disconnectHandler.run();
        }
    }

    @Override
    public int qpNum()
    {
        return qpNum;
    }

    @Override
    public QpState state()
    {
        return state;
    }

    @Override
    public ProtectionDomain pd()
    {
        return pd;
    }

    @Override
    public CompletionQueue sendCq()
    {
        return sendCq;
    }

    @Override
    public CompletionQueue recvCq()
    {
        return recvCq;
    }

    @Override
    public ByteBuffer remotePrivateData()
    {
        return remotePrivateData.duplicate();
    }

    @Override
    public String remoteAddress()
    {
        return remoteAddress;
    }

    @Override
    public int postSend(final SendRequest request)
    {
        final WrOpcode opcode = request.opcode();
        final int sges = request.sgeCount();
        if (opcode == null || sges > maxSge)
        {
            return PostResult.INVALID;
        }
        synchronized (sendLock)
        {
            if (!open)
            {
                return PostResult.CLOSED;
            }
            try
            {
                final PreparedSend prepared = preparedSend(request, opcode, sges);
                prepared.apply(request);
                prepared.call.execute();
                return PostResult.OK;
            }
            catch (final IOException ex)
            {
                return WorkRequestTranslator.postResultOf(ex.getMessage());
            }
        }
    }

    private PreparedSend preparedSend(final SendRequest request, final WrOpcode opcode, final int sges)
        throws IOException
    {
        if (!opcode.hasImmediate())
        {
            PreparedSend prepared = plainSends[opcode.ordinal()][sges];
            if (prepared == null)
            {
                prepared = new PreparedSend(qp, request);
                plainSends[opcode.ordinal()][sges] = prepared;
            }
            return prepared;
        }
        final long key = ((long)opcode.ordinal() << 40) | ((long)sges << 32) | (request.immData() & 0xFFFF_FFFFL);
        PreparedSend prepared = immSends.get(key);
        if (prepared == null)
        {
            if (immSends.size() >= IMM_CACHE_LIMIT)
            {
                immSends.values().forEach(PreparedSend::free);
                immSends.clear();
            }
            prepared = new PreparedSend(qp, request);
            immSends.put(key, prepared);
        }
        return prepared;
    }

    @Override
    public int postRecv(final RecvRequest request)
    {
        if (request.sgeCount() > maxSge)
        {
            return PostResult.INVALID;
        }
        synchronized (recvLock)
        {
            if (!open)
            {
                return PostResult.CLOSED;
            }
            try
            {
                PreparedRecv prepared = recvs.get(request.wrId());
                if (prepared == null || !prepared.matches(request))
                {
                    if (prepared != null)
                    {
                        prepared.call.free();
                    }
                    else if (recvs.size() >= recvCacheLimit)
                    {
                        recvs.values().forEach(entry -> entry.call.free());
                        recvs.clear();
                    }
                    prepared = new PreparedRecv(qp, request);
                    recvs.put(request.wrId(), prepared);
                }
                prepared.call.execute();
                return PostResult.OK;
            }
            catch (final IOException ex)
            {
                return WorkRequestTranslator.postResultOf(ex.getMessage());
            }
        }
    }

    @Override
    public void disconnect()
    {
        if (disconnectRequested.compareAndSet(false, true))
        {
            state = QpState.ERROR;
            // rdma_disconnect moves the local QP to ERROR (flushing) and sends a DREQ; both sides then get
            // RDMA_CM_EVENT_DISCONNECTED, which runs the handlers (onCmEvent).
            DisniVerbsContext.quietly(cmId::disconnect);
        }
    }

    @Override
    public void close()
    {
        synchronized (sendLock)
        {
            synchronized (recvLock)
            {
                if (!open)
                {
                    return;
                }
                open = false;
            }
        }
        disconnect();
        if (wasEstablished)
        {
            // Give our own DISCONNECTED event a moment, so the handler runs on the event as on the peer;
            // otherwise (dead peer, DREQ timing out) run it on the dispatcher thread, so that it runs once.
            final long deadline = System.nanoTime() + DISCONNECT_EVENT_WAIT_NANOS;
            while (!handlerRan.get() && System.nanoTime() - deadline < 0 && !context.dispatcher().isStopped())
            {
                LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(1));
            }
            if (!handlerRan.get())
            {
                context.dispatcher().execute(this::runDisconnectHandler);
            }
        }

        synchronized (sendLock)
        {
            for (final PreparedSend[] row : plainSends)
            {
                for (final PreparedSend prepared : row)
                {
                    if (prepared != null)
                    {
                        prepared.free();
                    }
                }
            }
            immSends.values().forEach(PreparedSend::free);
            immSends.clear();
        }
        synchronized (recvLock)
        {
            recvs.values().forEach(entry -> entry.call.free());
            recvs.clear();
        }
        context.dispatcher().unregister(cmId);
        DisniVerbsContext.quietly(cmId::destroyQP);
        DisniVerbsContext.quietly(cmId::destroyId);
        sendCq.detach(this);
        if (recvCq != sendCq)
        {
            recvCq.detach(this);
        }
        context.untrack(this);
    }

    @Override
    public String toString()
    {
        return "DisniQueuePair{qpNum=" + qpNum + ", state=" + state + ", remote=" + remoteAddress + '}';
    }

    /** One prepared {@code SVCPostSend} and handles on its modifiable fields. */
    static final class PreparedSend
    {
        final SVCPostSend call;
        private final SVCPostSend.SendWRMod wr;
        private final SVCPostSend.RdmaMod rdma;
        private final SVCPostSend.SgeMod[] sges;
        private final boolean isRdma;

        PreparedSend(final IbvQP qp, final SendRequest request) throws IOException
        {
            final IbvSendWR template = WorkRequestTranslator.newSendWr(request);
            this.call = qp.postSend(Collections.singletonList(template), null);
            this.wr = call.getWrMod(0);
            this.rdma = wr.getRdmaMod();
            this.sges = new SVCPostSend.SgeMod[request.sgeCount()];
            for (int i = 0; i < sges.length; i++)
            {
                sges[i] = wr.getSgeMod(i);
            }
            this.isRdma = WorkRequestTranslator.isRdma(request.opcode());
        }

        /** Writes the request's modifiable fields into the call's native work request. */
        void apply(final SendRequest request)
        {
            wr.setWr_id(request.wrId());
            wr.setSend_flags(WorkRequestTranslator.toDisniSendFlags(request.flags()));
            if (isRdma)
            {
                rdma.setRemote_addr(request.remoteAddress());
                rdma.setRkey(request.rkey());
            }
            for (int i = 0; i < sges.length; i++)
            {
                final SVCPostSend.SgeMod sge = sges[i];
                sge.setAddr(request.sgeAddress(i));
                sge.setLength(request.sgeLength(i));
                sge.setLkey(request.sgeLkey(i));
            }
        }

        void free()
        {
            call.free();
        }
    }

    /** One prepared {@code SVCPostRecv} and the SGEs it was built for (it cannot be modified). */
    static final class PreparedRecv
    {
        final SVCPostRecv call;
        private final long[] addresses;
        private final int[] lengths;
        private final int[] lkeys;

        PreparedRecv(final IbvQP qp, final RecvRequest request) throws IOException
        {
            final IbvRecvWR template = WorkRequestTranslator.newRecvWr(request);
            this.call = qp.postRecv(Collections.singletonList(template), null);
            final int count = request.sgeCount();
            addresses = new long[count];
            lengths = new int[count];
            lkeys = new int[count];
            for (int i = 0; i < count; i++)
            {
                addresses[i] = request.sgeAddress(i);
                lengths[i] = request.sgeLength(i);
                lkeys[i] = request.sgeLkey(i);
            }
        }

        boolean matches(final RecvRequest request)
        {
            if (request.sgeCount() != addresses.length)
            {
                return false;
            }
            for (int i = 0; i < addresses.length; i++)
            {
                if (addresses[i] != request.sgeAddress(i) || lengths[i] != request.sgeLength(i) ||
                    lkeys[i] != request.sgeLkey(i))
                {
                    return false;
                }
            }
            return true;
        }
    }
}
