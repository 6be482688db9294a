package io.reverb.rdma.provider.disni;

import com.ibm.disni.verbs.IbvQP;
import com.ibm.disni.verbs.RdmaCmId;
import io.reverb.rdma.provider.base.AbstractQueuePair;
import io.reverb.rdma.verbs.PostResult;
import io.reverb.rdma.verbs.QpState;
import io.reverb.rdma.verbs.QueuePairAttributes;
import io.reverb.rdma.verbs.RecvRequest;
import io.reverb.rdma.verbs.SendRequest;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.Collections;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * An RC queue pair through DiSNi. Posting reuses DiSNi's stateful verb calls: see {@link PostSendCache} (one prepared
 * {@code SVCPostSend} per opcode and SGE count, because DiSNi cannot change the opcode in place; immediates are
 * patched into the native work request) and {@link PostRecvCache} (calls kept by {@code wr_id} and SGEs,
 * because an {@code SVCPostRecv} cannot be changed at all).
 *
 * <p>Posting is serialised per direction (one lock for sends, one for receives) and against
 * {@link #close()}, so a post never reaches a destroyed QP.
 *
 * <p>Closing never blocks: it disconnects ({@code rdma_disconnect}: the QP goes to ERROR and flushes) and
 * destroys the native QP at once, so the caller may destroy the CQs and PD next; the rdma_cm id lives on until
 * its DISCONNECTED event arrives (or {@value #DISCONNECT_EVENT_WAIT_MS} ms pass), and is then destroyed on the
 * dispatcher thread, after the disconnect handler ran there. {@code rdma_disconnect} and {@code rdma_destroy_qp}
 * are serialised on one lock, and the id is destroyed only after both, so no native call races another on
 * the same id.
 */
final class DisniQueuePair extends AbstractQueuePair<DisniProtectionDomain, DisniCq>
    implements CmEventDispatcher.Handler, DisniCompletionQueue.Member
{
    /** Calls kept per immediate, only if DiSNi's call cannot be patched (not DiSNi 2.1): see {@link PostSendCache}. */
    static final int IMM_CACHE_LIMIT = 1024;
    static final int RECV_CACHE_MIN_LIMIT = 1024;
    static final long DISCONNECT_EVENT_WAIT_MS = 2_000;

    private final DisniVerbsContext context;
    private final RdmaCmId cmId;
    private final IbvQP qp;

    private final Object sendLock = new Object();
    private final Object recvLock = new Object();
    private final PostSendCache sends;
    private final PostRecvCache recvs;

    private final Object cmLock = new Object();
    private boolean disconnectRequested;
    private final AtomicBoolean handlerRan = new AtomicBoolean();
    private final AtomicBoolean closeFinished = new AtomicBoolean();
    private volatile boolean closeScheduled;
    private volatile long closeDeadlineNanos;
    private volatile boolean wasEstablished;
    private volatile boolean open = true;
    private volatile Throwable failure;
    private volatile String localAddress;

    DisniQueuePair(
        final DisniVerbsContext context,
        final RdmaCmId cmId,
        final IbvQP qp,
        final QueuePairAttributes attributes,
        final ByteBuffer remotePrivateData,
        final String remoteAddress,
        final int maxInline) throws IOException
    {
        super(qp.getQp_num(), attributes, remoteAddress, QpState.INIT);
        this.context = context;
        this.cmId = cmId;
        this.qp = qp;
        remotePrivateData(remotePrivateData);
        this.sends = new PostSendCache(template -> qp.postSend(Collections.singletonList(template), null), IMM_CACHE_LIMIT,
            maxInline, pd::holds);
        this.recvs = new PostRecvCache(
            template -> qp.postRecv(Collections.singletonList(template), null),
            Math.max(RECV_CACHE_MIN_LIMIT, 2 * attributes.maxRecvWr()));
        sendCq.attach(this, true);
        recvCq.attach(this, false);
    }

    /**
     * @return for a queue pair this process connected, the address of its handshake's TCP socket ({@code ip:port}):
     *         what the listener names this end by (its {@code remoteAddress()}); null for one it accepted.
     */
    @Override
    public String localAddress()
    {
        return localAddress;
    }

    /** @param address the connector's handshake socket's own address, as the listener sees it. */
    void localAddress(final String address)
    {
        this.localAddress = address;
    }

    /** @param data the private data the listener answered with (ACCEPT comes after the QP is created). */
    void peerPrivateData(final ByteBuffer data)
    {
        remotePrivateData(data);
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
    @Override
    public void markError()
    {
        state = QpState.ERROR;
    }

    /**
     * Its CQ broke (a failed poll, arm or event wait): the QP goes to ERROR, is disconnected, and its disconnect
     * handler runs now (a broken device may never deliver DISCONNECTED); {@link #failure()} says why.
     */
    @Override
    public void fail(final IOException cause)
    {
        if (failure == null)
        {
            failure = cause;
        }
        state = QpState.ERROR;
        disconnect();
        runDisconnectHandler();
    }

    @Override
    public Throwable failure()
    {
        return failure;
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
            if (closeScheduled)
            {
                finishClose();
            }
        }
    }

    private void runDisconnectHandler()
    {
        if (handlerRan.compareAndSet(false, true) && disconnectHandler != null)
        {
            disconnectHandler.run();
        }
    }

    /**
     * Not supported, the engine falls back to signaled SENDs: the NIC carries a SEND out after ibv_post_send returns
     * (on mlx5 the receive side's counterpart is scatter-to-CQE): its completion says when; the engine signals as it
     * always did.
     */
    @Override
    public boolean completesAtPost()
    {
        return false;
    }

    @Override
    public int postSend(final SendRequest request)
    {
        if (invalidSend(request))
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
        if (invalidRecv(request))
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
        synchronized (cmLock)
        {
            if (disconnectRequested)
            {
                return;
            }
            disconnectRequested = true;
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
        synchronized (sendLock)
        {
            sends.freeAll();
        }
        synchronized (recvLock)
        {
            recvs.freeAll();
        }
        synchronized (cmLock)
        {
            // After rdma_disconnect (same lock): the QP is in ERROR; destroying it now lets the caller destroy
            // the CQs and the PD at once. Not yet established (a connect that failed or timed out): the rdma_cm
            // thread may be inside rdma_get_cm_event modifying this QP for the CM's late answer, so destroy it
            // only while that thread is outside (at most one poll slice later).
            if (wasEstablished)
            {
                DisniVerbsContext.quietly(cmId::destroyQP);
            }
            else
            {
                context.dispatcher().outsideGetCmEvent(() -> DisniVerbsContext.quietly(cmId::destroyQP));
            }
        }
        // A PD closed while this QP used it (its context closing) goes with it.
        pd.queuePairDestroyed();
        sendCq.detach(this, true);
        recvCq.detach(this, false);
        context.untrack(this);

        closeDeadlineNanos = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(DISCONNECT_EVENT_WAIT_MS);
        closeScheduled = true;
        if (wasEstablished && !handlerRan.get())
        {
            // The id waits for its DISCONNECTED event (or the deadline) on the dispatcher: see onCmEvent.
            context.awaitDisconnectEvent(this);
        }
        else
        {
            context.dispatcher().execute(this::finishClose);
        }
    }

    /** @return true once {@link #close()} is done and the DISCONNECTED event is overdue. */
    boolean closeDeadlinePassed(final long nowNanos)
    {
        return closeScheduled && nowNanos - closeDeadlineNanos >= 0;
    }

    /**
     * The last step of closing, once: runs the disconnect handler if it has not run (established QPs only)
     * and destroys the rdma_cm id. On the dispatcher thread (or the closing context's thread once the
     * dispatcher stopped).
     */
    void finishClose()
    {
        if (!closeScheduled || !closeFinished.compareAndSet(false, true))
        {
            return;
        }
        if (wasEstablished)
        {
            runDisconnectHandler();
        }
        context.dispatcher().destroyId(cmId);
        context.closeFinished(this);
    }

    /** @return true once the rdma_cm id is destroyed. */
    boolean isCloseFinished()
    {
        return closeFinished.get();
    }

    @Override
    public String toString()
    {
        return "DisniQueuePair{qpNum=" + qpNum + ", state=" + state + ", remote=" + remoteAddress + '}';
    }
}
