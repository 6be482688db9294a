package io.reverb.rdma.provider.disni;

import com.ibm.disni.verbs.IbvQP;
import com.ibm.disni.verbs.RdmaCmId;
import io.reverb.rdma.verbs.CompletionQueue;
import io.reverb.rdma.verbs.PostResult;
import io.reverb.rdma.verbs.ProtectionDomain;
import io.reverb.rdma.verbs.QpState;
import io.reverb.rdma.verbs.QueuePair;
import io.reverb.rdma.verbs.QueuePairAttributes;
import io.reverb.rdma.verbs.RecvRequest;
import io.reverb.rdma.verbs.SendRequest;
import io.reverb.rdma.verbs.WrOpcode;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.Collections;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.LockSupport;

/**
 * An RC queue pair through DiSNi. Posting reuses DiSNi's stateful verb calls: see {@link PostSendCache} (one prepared
 * {@code SVCPostSend} per opcode and SGE count, and per immediate for *_WITH_IMM, because DiSNi cannot
 * change opcode or immediate in place) and {@link PostRecvCache} (calls kept by {@code wr_id} and SGEs,
 * because an {@code SVCPostRecv} cannot be changed at all).
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
    private final PostSendCache sends;
    private final PostRecvCache recvs;

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
        this.sends = new PostSendCache(template -> qp.postSend(Collections.singletonList(template), null), IMM_CACHE_LIMIT);
        this.recvs = new PostRecvCache(
            template -> qp.postRecv(Collections.singletonList(template), null),
            Math.max(RECV_CACHE_MIN_LIMIT, 2 * attributes.maxRecvWr()));
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
            // The peer disconnected (or died, and its kernel sent the DREQ). Answer with rdma_disconnect,
            // as DiSNi's own endpoints do: librdmacm then moves our QP to ERROR (IB/RoCE; the kernel does it
            // for iWARP), so outstanding and later work requests complete with WR_FLUSH_ERR.
            disconnect();
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
                sends.prepare(request).execute();
                return PostResult.OK;
            }
            catch (final IOException ex)
            {
                return WorkRequestTranslator.postResultOf(ex.getMessage());
            }
        }
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
                recvs.prepare(request).execute();
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
            sends.freeAll();
        }
        synchronized (recvLock)
        {
            recvs.freeAll();
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
}
