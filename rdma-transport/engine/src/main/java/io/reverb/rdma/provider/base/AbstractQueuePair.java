package io.reverb.rdma.provider.base;

import io.reverb.rdma.verbs.CompletionQueue;
import io.reverb.rdma.verbs.PostResult;
import io.reverb.rdma.verbs.ProtectionDomain;
import io.reverb.rdma.verbs.QpState;
import io.reverb.rdma.verbs.QueuePair;
import io.reverb.rdma.verbs.QueuePairAttributes;
import io.reverb.rdma.verbs.RecvRequest;
import io.reverb.rdma.verbs.SendRequest;
import io.reverb.rdma.verbs.WrOpcode;
import java.nio.ByteBuffer;

/**
 * What every provider's queue pair holds the same way: its number, PD, CQs, state, the peer's address and
 * private data, and the checks of a work request's shape ({@link #invalidSend}, {@link #invalidRecv}) that
 * come before any provider-specific work. One level of inheritance only: the posting and the protocol stay
 * in the provider's class.
 *
 * @param <P> the provider's protection domain type
 * @param <C> the provider's completion queue type
 */
public abstract class AbstractQueuePair<P extends ProtectionDomain, C extends CompletionQueue> implements QueuePair
{
    private static final ByteBuffer NO_PRIVATE_DATA = ByteBuffer.allocate(0).asReadOnlyBuffer();

    protected final int qpNum;
    protected final P pd;
    protected final C sendCq;
    protected final C recvCq;
    protected final int maxSge;
    protected final Runnable disconnectHandler;
    protected final String remoteAddress;
    protected volatile QpState state;
    private volatile ByteBuffer remotePrivateData = NO_PRIVATE_DATA;

    /**
     * @param qpNum        the QP number
     * @param attributes   the attributes the QP was created with (PD and CQs must be the provider's types)
     * @param remoteAddress the peer's address, for diagnostics
     * @param initialState the state the QP starts in
     */
    @SuppressWarnings("unchecked")
    protected AbstractQueuePair(
        final int qpNum, final QueuePairAttributes attributes, final String remoteAddress, final QpState initialState)
    {
        this.qpNum = qpNum;
        this.pd = (P)attributes.pd();
        this.sendCq = (C)attributes.sendCq();
        this.recvCq = (C)attributes.recvCq();
        this.maxSge = attributes.maxSge();
        this.disconnectHandler = attributes.disconnectHandler();
        this.remoteAddress = remoteAddress;
        this.state = initialState;
    }

    /** Sets the private data the peer sent when connecting (a read-only copy is kept; null means none). */
    protected final void remotePrivateData(final ByteBuffer data)
    {
        remotePrivateData = data == null ? NO_PRIVATE_DATA : data.asReadOnlyBuffer();
    }

    /**
     * The checks every software provider makes first when a send is posted (send lock held).
     *
     * @param closed whether the QP is closed
     * @return {@link PostResult#CLOSED}, {@link PostResult#INVALID} (no opcode, too many SGEs, over 2 GiB in
     * all) or {@link PostResult#OK} to go on
     */
    protected final int checkSend(final SendRequest request, final boolean closed)
    {
        if (closed)
        {
            return PostResult.CLOSED;
        }
        return invalidSend(request) || request.totalLength() > Integer.MAX_VALUE ? PostResult.INVALID : PostResult.OK;
    }

    /**
     * The checks every software provider makes first when a receive is posted (receive lock held).
     *
     * @return {@link PostResult#CLOSED}, {@link PostResult#INVALID} or {@link PostResult#OK} to go on
     */
    protected final int checkRecv(final RecvRequest request, final boolean closed)
    {
        if (closed)
        {
            return PostResult.CLOSED;
        }
        return invalidRecv(request) ? PostResult.INVALID : PostResult.OK;
    }

    /** @return true if the send request's shape is invalid: no opcode or more SGEs than this QP accepts. */
    protected final boolean invalidSend(final SendRequest request)
    {
        final WrOpcode opcode = request.opcode();
        return opcode == null || request.sgeCount() > maxSge;
    }

    /** @return true if the receive request has more SGEs than this QP accepts. */
    protected final boolean invalidRecv(final RecvRequest request)
    {
        return request.sgeCount() > maxSge;
    }

    @Override
    public final int qpNum()
    {
        return qpNum;
    }

    @Override
    public final QpState state()
    {
        return state;
    }

    @Override
    public final ProtectionDomain pd()
    {
        return pd;
    }

    @Override
    public final CompletionQueue sendCq()
    {
        return sendCq;
    }

    @Override
    public final CompletionQueue recvCq()
    {
        return recvCq;
    }

    @Override
    public final ByteBuffer remotePrivateData()
    {
        return remotePrivateData.duplicate();
    }

    @Override
    public final String remoteAddress()
    {
        return remoteAddress;
    }
}
