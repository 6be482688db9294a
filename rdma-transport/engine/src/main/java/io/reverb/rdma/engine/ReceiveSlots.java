package io.reverb.rdma.engine;

import io.reverb.rdma.verbs.Access;
import io.reverb.rdma.verbs.CompletionQueue;
import io.reverb.rdma.verbs.MemoryRegion;
import io.reverb.rdma.verbs.PostResult;
import io.reverb.rdma.verbs.ProtectionDomain;
import io.reverb.rdma.verbs.QueuePair;
import io.reverb.rdma.verbs.RecvRequest;
import io.reverb.rdma.verbs.WcOpcode;
import io.reverb.rdma.verbs.WcStatus;
import io.reverb.rdma.verbs.WorkCompletions;
import java.io.IOException;
import java.util.concurrent.atomic.AtomicReferenceFieldUpdater;
import org.agrona.DirectBuffer;
import org.agrona.concurrent.UnsafeBuffer;

/**
 * The receive direction of a connection (as Aeron's {@code PublicationImage} is to its
 * {@code NetworkPublication}): the registered receive slots, kept posted; polling the receive CQ; decoding
 * each batch (header, control frames, data frames, {@link BatchHeaderFlyweight}...); and delivering eager
 * and rendezvous messages to the handler.
 *
 * <p>Before a handler is set, receives are taken one at a time; one that holds a message is parked (not
 * re-posted, and nothing after it is taken) until the handler arrives. Credits and control frames keep
 * flowing until then, so a send-only user need not set a handler at all.
 *
 * <p>Poller thread only, except {@link #handler(MessageHandler)} and {@link #pause(boolean)}.
 */
final class ReceiveSlots
{
    private static final int NO_RENDEZVOUS = Integer.MIN_VALUE;

    private final EngineConnection connection;
    private final ConnectionStats stats;
    private final CompletionQueue recvCq;
    private final MemoryRegion region;
    private final UnsafeBuffer buffer;
    private final int slotLength;
    private final int slots;
    private final RecvRequest recvRequest = new RecvRequest();
    private final BatchHeaderFlyweight header = new BatchHeaderFlyweight();
    private final ControlFrameFlyweight controlFrame = new ControlFrameFlyweight();
    private final DataFrameFlyweight dataFrame = new DataFrameFlyweight();
    private final WorkCompletions singleCompletion = new WorkCompletions(1);
    private QueuePair qp;
    private InboundRendezvous rendezvous;

    private volatile MessageHandler handler;
    private static final AtomicReferenceFieldUpdater<ReceiveSlots, MessageHandler> HANDLER =
        AtomicReferenceFieldUpdater.newUpdater(ReceiveSlots.class, MessageHandler.class, "handler");
    /** The handler of a connection closed before it had one: see {@link #discardIfNoHandler()}. */
    private static final MessageHandler DISCARD = (buffer, offset, length) ->
    {
    };
    private volatile boolean paused;

    private BufferPool.Buffer deliveringRendezvous;
    private UnsafeBuffer deliveringBuffer;
    private int deliveringOffset;
    private int deliveringLength;

    // a message was delivered since the last batch end (poller thread)
    private boolean deliveredSinceBatchEnd;

    /**
     * Messages one poll delivers at most ({@link EngineConfig#messagesPerPoll(int)}): a connection receiving a burst
     * (a thousand small frames in a few receives) hands the poller back after this many, so the other connections
     * of its poller wait for this many messages, not for the burst.
     */
    private final int framesPerPoll;
    /** What this poll may still deliver (poller thread). */
    private int frameBudget;
    /** Completions taken from the CQ that the budget left for later polls: {@code deferredNext .. count()-1}. */
    private WorkCompletions deferred = new WorkCompletions(1);
    private int deferredNext;

    /**
     * Credits the batches of this poll returned, applied with its re-posted receives in one step at its end
     * ({@link #afterReceives(int)}; poller thread).
     */
    private long creditsReturned;
    /** Credits the peer returned since the connection began (poller thread). */
    private long creditsReturnedInAll;

    private int parkedSlot = -1;
    private int parkedOffset;
    private int parkedEnd;
    private int parkedRendezvousId;

    ReceiveSlots(final EngineConnection connection, final ProtectionDomain pd) throws IOException
    {
        this.connection = connection;
        this.stats = connection.statsRef();
        this.recvCq = connection.recvCq;
        this.slots = connection.config.receiveSlots();
        this.slotLength = connection.config.receiveSlotLength();
        this.framesPerPoll = connection.config.messagesPerPoll();
        this.region = pd.allocate(slots * slotLength, Access.LOCAL_WRITE);
        this.buffer = region.buffer();
    }

    /** Posts every slot once the QP exists. */
    void attach(final QueuePair qp, final InboundRendezvous rendezvous)
    {
        this.qp = qp;
        this.rendezvous = rendezvous;
        for (int i = 0; i < slots; i++)
        {
            post(i);
        }
    }

    int slots()
    {
        return slots;
    }

    void handler(final MessageHandler handler)
    {
        this.handler = handler;
    }

    /**
     * The connection closes and no handler was ever set: from now on messages are dropped (a handler set meanwhile
     * stays, and one set later replaces the dropping one), so that those held for a handler no longer stop this
     * connection's receives, the close's own frames among them.
     */
    void discardIfNoHandler()
    {
        HANDLER.compareAndSet(this, null, DISCARD);
    }

    void pause(final boolean paused)
    {
        this.paused = paused;
    }

    /**
     * Takes what arrived: a parked receive once a handler is set, else the receive CQ.
     *
     * @return true if anything was processed, or the CQ's poll moved data ({@link CompletionQueue#lastPollMovedData()})
     */
    boolean poll(final WorkCompletions wc)
    {
        if (paused || connection.peerBroke())
        {
            return false; // a peer that broke the protocol: nothing more of it is used (its connection is going down)
        }
        frameBudget = framesPerPoll;
        if (parkedSlot >= 0)
        {
            if (handler == null)
            {
                return false;
            }
            if (resumeParked())
            {
                takeDeferred();
            }
            batchEnd();
            return true;
        }
        if (deferredNext < deferred.count())
        {
            takeDeferred();
            batchEnd();
            return true;
        }
        final WorkCompletions target = handler != null ? wc : singleCompletion;
        final int n = recvCq.poll(target);
        if (n > 0)
        {
            final int stoppedAt = onCompletions(target, 0, n);
            if (stoppedAt < n)
            {
                defer(target, stoppedAt, n);
            }
            batchEnd();
            return true;
        }
        // A provider that moves data on the polling thread (tcp) is halfway through a message: that is work too.
        return recvCq.lastPollMovedData();
    }

    /** @return whether the parked receive was finished (false: it parked again). */
    private boolean resumeParked()
    {
        final int slot = parkedSlot;
        parkedSlot = -1;
        final boolean done = parkedRendezvousId != NO_RENDEZVOUS ?
            onRendezvousData(slot, parkedRendezvousId) : onDataFrames(slot, parkedOffset, parkedEnd);
        afterReceives(done && connection.state() < EngineConnection.STATE_CLOSED && !connection.isDisconnected() &&
            post(slot) ? 1 : 0);
        return done;
    }

    private void takeDeferred()
    {
        if (deferredNext < deferred.count() && connection.state() < EngineConnection.STATE_CLOSED)
        {
            deferredNext = onCompletions(deferred, deferredNext, deferred.count());
        }
    }

    /**
     * The QP is down (poller thread): what arrived before is delivered, without a budget: the receive the budget cut
     * short and the completions it left, then {@code n} more from {@code wc}.
     */
    void drain(final WorkCompletions wc, final int n)
    {
        if (connection.peerBroke())
        {
            return; // nothing that came after a protocol error is delivered
        }
        frameBudget = Integer.MAX_VALUE;
        if (parkedSlot >= 0 && handler != null && resumeParked())
        {
            takeDeferred();
        }
        else if (parkedSlot < 0)
        {
            takeDeferred();
        }
        if (n > 0)
        {
            onCompletions(wc, 0, n);
        }
    }

    /**
     * Keeps the completions this poll took from the CQ but did not reach (its frame budget ran out): the next polls
     * take them, in order, before the CQ's.
     */
    private void defer(final WorkCompletions from, final int start, final int end)
    {
        if (deferred.capacity() < end - start)
        {
            deferred = new WorkCompletions(from.capacity());
        }
        for (int i = start; i < end; i++)
        {
            deferred.set(i - start, from.wrId(i), from.status(i), from.opcode(i), from.byteLen(i), from.immData(i),
                from.wcFlags(i), from.qpNum(i));
        }
        deferred.count(end - start);
        deferredNext = 0;
    }

    /** After one poll's completions: tells the handler, if anything was delivered and the connection is not closed. */
    private void batchEnd()
    {
        if (!deliveredSinceBatchEnd)
        {
            return;
        }
        deliveredSinceBatchEnd = false;
        final MessageHandler h = handler;
        if (h == null || connection.state() >= EngineConnection.STATE_CLOSED)
        {
            return;
        }
        try
        {
            h.onBatchEnd();
        }
        catch (final Throwable t)
        {
            connection.engine.onError(
                new EngineException("batch-end handler of connection to " + connection.remoteAddress() + " threw", t));
        }
    }

    /**
     * Processes receive completions {@code from .. n-1}, re-posting each slot that is done with, until this poll's
     * frame budget runs out.
     *
     * @return the index of the first completion not processed ({@code n} if all were): a completion whose frames the
     * budget cut short is parked and counts as processed.
     */
    int onCompletions(final WorkCompletions wc, final int from, final int n)
    {
        int reposted = 0;
        int i = from;
        while (i < n && frameBudget > 0)
        {
            if (connection.peerBroke())
            {
                i = n; // a protocol error: what the peer sent after it is dropped
                break;
            }
            final WcStatus status = wc.status(i);
            if (status != WcStatus.SUCCESS)
            {
                i++;
                connection.onErrorCompletion(status, "receive");
                continue;
            }
            final int slot = (int)wc.wrId(i);
            final boolean done;
            if (wc.opcode(i) == WcOpcode.RECV_RDMA_WITH_IMM)
            {
                done = onRendezvousData(slot, wc.immData(i));
            }
            else
            {
                done = onBatch(slot, wc.byteLen(i));
            }
            i++;
            if (connection.state() >= EngineConnection.STATE_CLOSED)
            {
                return n;
            }
            if (done && !connection.isDisconnected() && post(slot))
            {
                reposted++;
            }
            if (!done || frameBudget <= 0)
            {
                break; // parked (no handler yet, or the budget ran out inside it), or the budget is spent
            }
        }
        afterReceives(reposted);
        return i;
    }

    /**
     * The end of a poll's receives: the credits their batches returned and the receives re-posted go to the send side
     * together (one lock), and what they let go is sent. A batch's credits are taken after its messages were delivered:
     * a reply that finds the window empty is sent here, in the same poll.
     */
    private void afterReceives(final int reposted)
    {
        final long returned = creditsReturned;
        creditsReturned = 0;
        if (!connection.afterReceives(returned, reposted))
        {
            connection.protocolError("returned " + returned + " credits, more than its " + connection.peerReceiveSlots() +
                " receives");
        }
    }

    private boolean post(final int slot)
    {
        recvRequest.wrId(slot);
        recvRequest.setSge(region, slot * slotLength, slotLength);
        final int rc = qp.postRecv(recvRequest);
        if (rc != PostResult.OK)
        {
            connection.failLater(new PeerDisconnectedException("re-posting a receive failed: " + PostResult.toString(rc)));
            return false;
        }
        return true;
    }

    /** @return false if parked (no handler yet): the slot is not to be re-posted now. */
    private boolean onBatch(final int slot, final int byteLength)
    {
        final int base = slot * slotLength;
        if (byteLength < Wire.BATCH_HEADER_LENGTH)
        {
            connection.protocolError("batch of " + byteLength + " bytes");
            return true;
        }
        header.wrap(buffer, base);
        final int returned = header.credits();
        final int controlLength = header.controlLength();
        if (returned < 0 || controlLength < 0 || controlLength > Wire.MAX_CONTROL_SECTION ||
            Wire.BATCH_HEADER_LENGTH + controlLength > byteLength)
        {
            connection.protocolError("bad batch header (credits " + returned + ", control " + controlLength + ")");
            return true;
        }
        final AuthGate gate = connection.authGate;
        if (gate != null)
        {
            if (!gate.admit(connection, buffer, base + Wire.BATCH_HEADER_LENGTH, controlLength))
            {
                return true; // refused: the gate's outcome aborts the connection
            }
            connection.authGate = null;
        }
        if (returned > 0)
        {
            // Checked now, before the batch is used: no more in all than this side consumed (and, on the acceptor, the
            // window the first batch announces); taken at the poll's end, with the receives re-posted (afterReceives).
            if (creditsReturnedInAll + returned > connection.creditReturnLimit())
            {
                connection.protocolError("returned " + returned + " credits, more than its " + connection.peerReceiveSlots() +
                    " receives");
                return true;
            }
            creditsReturnedInAll += returned;
            creditsReturned += returned;
        }
        int offset = base + Wire.BATCH_HEADER_LENGTH;
        final int controlEnd = offset + controlLength;
        for (; offset < controlEnd; offset += Wire.CONTROL_FRAME_LENGTH)
        {
            connection.onControlFrame(controlFrame.wrap(buffer, offset));
        }
        return onDataFrames(slot, offset, base + byteLength);
    }

    private boolean onDataFrames(final int slot, final int start, final int end)
    {
        int offset = start;
        while (offset < end)
        {
            if (end - offset < Wire.FRAME_HEADER_LENGTH)
            {
                connection.protocolError("truncated frame");
                return true;
            }
            final DataFrameFlyweight frame = dataFrame.wrap(buffer, offset);
            final int length = frame.length();
            final int type = frame.type();
            if (type == Wire.FRAME_DATA)
            {
                if (length < 0 || length > end - offset - Wire.FRAME_HEADER_LENGTH)
                {
                    connection.protocolError("data frame of " + length + " bytes overruns its batch");
                    return true;
                }
                final MessageHandler h = handler;
                if (h == null)
                {
                    park(slot, offset, end, NO_RENDEZVOUS);
                    return false;
                }
                stats.eagerMessagesReceived.incrementRelease();
                stats.eagerBytesReceived.getAndAddRelease(length);
                deliver(h, buffer, frame.payloadOffset(), length, null);
                offset += Wire.dataFrameLength(length);
                if (--frameBudget <= 0 && offset < end)
                {
                    park(slot, offset, end, NO_RENDEZVOUS); // the rest waits for this connection's next turn
                    return false;
                }
            }
            else if (type == Wire.FRAME_RTS)
            {
                final String error = rendezvous.onRequestToSend((int)frame.id(), length);
                if (error != null)
                {
                    connection.protocolError(error);
                    return true;
                }
                offset += Wire.FRAME_HEADER_LENGTH;
            }
            else
            {
                connection.protocolError("unknown frame type " + type);
                return true;
            }
        }
        return true;
    }

    private boolean onRendezvousData(final int slot, final int id)
    {
        final MessageHandler h = handler;
        if (h == null)
        {
            park(slot, 0, 0, id);
            return false;
        }
        final BufferPool.Buffer granted = rendezvous.take(id);
        if (granted == null)
        {
            connection.protocolError("rendezvous data for unknown id " + id);
            return true;
        }
        stats.rendezvousMessagesReceived.incrementRelease();
        stats.rendezvousBytesReceived.getAndAddRelease(granted.length);
        deliver(h, granted.buffer, 0, granted.length, granted);
        frameBudget--;
        if (!granted.retained)
        {
            rendezvous.release(granted);
        }
        rendezvous.grantQueued();
        return true;
    }

    private void park(final int slot, final int offset, final int end, final int rendezvousId)
    {
        parkedSlot = slot;
        parkedOffset = offset;
        parkedEnd = end;
        parkedRendezvousId = rendezvousId;
    }

    private void deliver(
        final MessageHandler h, final UnsafeBuffer buffer, final int offset, final int length, final BufferPool.Buffer rendezvous)
    {
        deliveringBuffer = buffer;
        deliveringOffset = offset;
        deliveringLength = length;
        deliveringRendezvous = rendezvous;
        deliveredSinceBatchEnd = true;
        try
        {
            h.onMessage(buffer, offset, length);
        }
        catch (final Throwable t)
        {
            connection.engine.onError(
                new EngineException("message handler of connection to " + connection.remoteAddress() + " threw", t));
        }
        finally
        {
            deliveringBuffer = null;
            deliveringRendezvous = null;
        }
    }

    /** @see Connection#retain() */
    RetainedMessage retain()
    {
        if (deliveringBuffer == null || Thread.currentThread() != connection.poller.thread())
        {
            throw new IllegalStateException("retain() is only valid inside MessageHandler.onMessage, on the poller thread");
        }
        final BufferPool.Buffer rendezvous = deliveringRendezvous;
        if (rendezvous != null)
        {
            rendezvous.retained = true;
            return rendezvous;
        }
        final UnsafeBuffer copy = new UnsafeBuffer(new byte[deliveringLength]);
        copy.putBytes(0, deliveringBuffer, deliveringOffset, deliveringLength);
        final int length = deliveringLength;
        return new RetainedMessage()
        {
            public DirectBuffer buffer()
            {
                return copy;
            }

            public int offset()
            {
                return 0;
            }

            public int length()
            {
                return length;
            }

            public void release()
            {
            }
        };
    }
}
