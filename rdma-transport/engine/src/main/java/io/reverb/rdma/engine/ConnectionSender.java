package io.reverb.rdma.engine;

import io.reverb.rdma.verbs.Access;
import io.reverb.rdma.verbs.MemoryRegion;
import io.reverb.rdma.verbs.PostResult;
import io.reverb.rdma.verbs.ProtectionDomain;
import io.reverb.rdma.verbs.QueuePair;
import io.reverb.rdma.verbs.SendRequest;
import io.reverb.rdma.verbs.WcStatus;
import io.reverb.rdma.verbs.WorkCompletions;
import io.reverb.rdma.verbs.WrOpcode;
import io.reverb.common.WriteClaim;
import java.io.IOException;
import java.util.List;
import org.agrona.concurrent.UnsafeBuffer;

import static io.reverb.rdma.engine.Connection.BACK_PRESSURED;
import static io.reverb.rdma.engine.Connection.CLOSED;
import static io.reverb.rdma.engine.Connection.NOT_CONNECTED;
import static io.reverb.rdma.engine.Connection.OK;
import static io.reverb.rdma.engine.Connection.TOO_LARGE;

/**
 * The send direction of a connection (as Aeron's {@code NetworkPublication} is to its
 * {@code PublicationImage}): claims in the {@link SendRing}, commits, and the flush that posts batches
 * (control frames from the {@link ControlQueue}, then committed frames) and rendezvous writes as the
 * {@link CreditWindow} allows; send completions; writable callbacks.
 *
 * <h2>Threads</h2>
 * Everything here is guarded by this side's {@link SendLock}, which this class creates and owns and hands to the
 * {@link RendezvousSender}, the connection (its state transitions) and its {@link CloseCallbacks}; a method that
 * needs it held says so and asserts it. It is touched by producers and the poller. Whoever
 * commits a message posts it right away if credits allow ("flush"), so the poller is not on the send path;
 * the poller flushes what waited for credits, a CTS or the send CQ.
 *
 * <h2>Signaled work requests in flight</h2>
 * SENDs and rendezvous writes posted and not yet reaped from the send CQ are bounded by
 * {@code maxSignaledInFlight}: a CQ holds only so many completions, the send queue only so many requests,
 * and {@code batchEnds}/control slots are reused by sequence, so posting stops at the bound (back-pressure,
 * {@code sendQueueStalls}) and resumes when the poller reaps (as ibverbs users count signaled sends). Credits
 * alone do not bound this: the peer returns credits before this side reaps its completions. A poller sending
 * from a completion never waits on a CQ only it drains.
 *
 * <p>Selective signaling (issue 24, part 2 item 6): a SEND asks for a completion only every {@value #SIGNAL_EVERY}
 * SENDs, or when it carries CLOSE, or when the next batch could not follow it at once (no more data in the ring,
 * too few credits, the bound above nearly reached, a rendezvous write to go first); the others are unsignaled. A
 * send queue completes in order, so a SEND's completion accounts for the unsignaled SENDs before it too: their ring
 * space is released up to its batch end and they leave the in-flight count with it. Until then they
 * count as in flight (they hold send-queue entries and control slots). A SEND is only left unsignaled when the
 * same flush can post the next batch, so a sender that stops (idle, out of credits, at the bound) has its last SEND
 * signaled and all of its ring space back once that completes, as without selective signaling.
 *
 * <p>On a QP that {@link QueuePair#completesAtPost() completes at post} (shm: the posting thread has placed the bytes
 * in the peer's inbox when postSend returns) no SEND but CLOSE asks for a completion: a SEND that the provider reports
 * {@link SendRequest#completedAtPost() completed} gives its ring space back right there, under the same lock, and
 * the send CQ sees nothing on the message path. One that failed is left in flight; its error completion follows.
 *
 * <h2>Rendezvous</h2>
 * Claims above the eager limit (a pool buffer, or a direct write into the peer's mapped grant), the CTS and REFUSE
 * that answer them and refusals are the {@link RendezvousSender}'s; this class posts their RTS and writes.
 */
final class ConnectionSender implements InboundRendezvous.Answers, WriteClaim.Committer
{
    private static final long TAG_SHIFT = 60;
    private static final long TAG_SEND = 0;
    private static final long TAG_WRITE = 1;
    private static final long TAG_READY = 2;
    private static final long ID_MASK = (1L << TAG_SHIFT) - 1;
    /** At most this many SENDs in a row, the last one signaled (see the class comment). */
    static final int SIGNAL_EVERY = 8;

    private final EngineConnection connection;
    /** This send side's lock, created here: see {@link SendLock} for what it guards and the lock order. */
    private final SendLock lock = new SendLock();
    private final ConnectionStats stats;
    private final SendRing ring;
    private final CreditWindow window;
    private final SendRequest sendRequest = new SendRequest();
    private final BatchHeaderFlyweight outboundHeader = new BatchHeaderFlyweight();
    private final OutboundRendezvous outbound = new OutboundRendezvous();
    private final RendezvousSender rendezvousSender;
    private final ControlQueue controlQueue = new ControlQueue(16);
    private final WritableCallbacks writable;

    private QueuePair qp;
    /** {@link QueuePair#completesAtPost()} of {@link #qp}: SENDs other than CLOSE go unsignaled and complete at post. */
    private boolean completesAtPost;
    private MemoryRegion controlRegion;
    private UnsafeBuffer control;
    private int controlSlots;
    private int peerEagerLimit;
    private int sendEagerLimit;

    private long sendSeq;
    /** Every SEND below this sequence is accounted for by a completion (its own or a later one's). */
    private long completedSeq;
    private int unsignaledSinceSignaled;
    private long[] batchEnds;
    private int sendsInFlight;
    private int signaledInFlight;
    private int maxSignaledInFlight;
    private boolean sendCqStalled;
    private boolean creditStalled;
    private long nextMessageId;
    private int outstandingClaims;
    private long closeBatchSeq = -1;
    private boolean closeSendCompleted;

    /** ABORT frames queued, not yet posted: they count against the peer's announcement limit until then. */
    private int abortsQueued;

    ConnectionSender(final EngineConnection connection, final ProtectionDomain pd) throws IOException
    {
        final EngineConfig config = connection.config;
        this.connection = connection;
        this.stats = connection.statsRef();
        this.ring = new SendRing(pd.allocate(config.sendSlots() * Wire.dataFrameLength(config.eagerLimit()), Access.LOCAL_WRITE));
        this.window = new CreditWindow(config.receiveSlots());
        this.rendezvousSender = new RendezvousSender(this, connection, lock, ring, outbound);
        this.writable = new WritableCallbacks(lock, connection.engine::onError,
            () -> connection.state() == EngineConnection.STATE_CONNECTED);
    }

    /** Completes set-up once the QP exists: peer geometry, control slots, the rendezvous send pool, credits. */
    void attach(
        final QueuePair qp,
        final ProtectionDomain pd,
        final Handshake.Hello peer,
        final int sendCqCapacity,
        final int localReceiveSlots) throws IOException
    {
        final EngineConfig config = connection.config;
        this.qp = qp;
        this.completesAtPost = qp.completesAtPost();
        this.peerEagerLimit = peer.eagerLimit;
        this.sendEagerLimit = Math.min(config.eagerLimit(), peerEagerLimit);
        this.controlSlots = peer.receiveSlots + 1;
        // One extra 16 bytes at the end: the source of the acceptor's ready write.
        this.controlRegion = pd.allocate(controlSlots * Wire.CONTROL_SLOT_LENGTH + 16, Access.LOCAL_WRITE);
        this.control = controlRegion.buffer();
        this.batchEnds = new long[controlSlots];
        // Also within the send CQ (created for at least the peer's receive slots + 8, the ready write
        // included) and the QP's maxSendWr (peer receive slots + 4).
        this.maxSignaledInFlight = Math.min(peer.receiveSlots, sendCqCapacity - 8);
        rendezvousSender.attach(qp, pd);
        // The acceptor's credits arrive with the connector's first batch, sent once it has seen our ready word;
        // that batch announces the connector's receives, all posted by now.
        window.start(connection.acceptor, peer.receiveSlots, localReceiveSlots);
    }

    /** @return this send side's lock, which the connection's state transitions and close callbacks share */
    SendLock lock()
    {
        return lock;
    }

    SendRing ring()
    {
        return ring;
    }

    int eagerLimit()
    {
        return sendEagerLimit;
    }

    /** Posts what may go now (poller, on attention). */
    void flushAndReportRefused()
    {
        synchronized (lock)
        {
            flush();
            if (!rendezvousSender.hasRefusedCommitted())
            {
                return;
            }
        }
        rendezvousSender.reportRefusedCommitted();
    }

    /** The connection's state changed (send lock held): writable callbacks must see it; closing gives up an announcement. */
    void stateChanged()
    {
        assert lock.isHeldByCurrentThread();
        writable.progressed();
        rendezvousSender.stateChanged();
    }

    /** @return the pool of this side's rendezvous buffers (the {@link RendezvousSender}'s). */
    BufferPool pool()
    {
        return rendezvousSender.pool();
    }

    /** @return true if large messages are written straight into the peer's grants on this connection. */
    boolean directWrite()
    {
        return rendezvousSender.directWrite();
    }

    /** @return mappings of the peer's grants open now (send lock held; tests: 0 when idle). */
    int mappingsOpen()
    {
        assert lock.isHeldByCurrentThread();
        return rendezvousSender.mappingsOpen();
    }

    boolean hasWritableWaiters()
    {
        return writable.hasWaiters();
    }

    /** @return true (send lock held) once nothing claimed, committed or announced is left to post. */
    boolean isDrained()
    {
        assert lock.isHeldByCurrentThread();
        return ring.isFullyPosted() && outstandingClaims == 0 && outbound.isEmpty();
    }

    /**
     * Queues CLOSE and posts it (send lock held); its SEND's completion sets {@link #closeSendCompleted()}.
     *
     * @param answer the peer's CLOSE came first: this one answers it ({@link Wire#CLOSE_ANSWER}).
     */
    void sendClose(final boolean answer)
    {
        assert lock.isHeldByCurrentThread();
        enqueueControl(Wire.CONTROL_CLOSE, answer ? Wire.CLOSE_ANSWER : 0, 0, 0, 0, 0);
        flush();
    }

    boolean closeSendCompleted()
    {
        return closeSendCompleted;
    }

    /** @return claims not yet committed or aborted (send lock held). */
    int outstandingClaims()
    {
        assert lock.isHeldByCurrentThread();
        return outstandingClaims;
    }

    int credits()
    {
        assert lock.isHeldByCurrentThread();
        return window.credits();
    }

    /** @return credits, read without the lock: a gauge's racy but harmless view (the counters' sampler). */
    int creditsUnlocked()
    {
        return window.credits();
    }

    int owed()
    {
        assert lock.isHeldByCurrentThread();
        return window.owed();
    }

    int outboundGranted()
    {
        assert lock.isHeldByCurrentThread();
        return outbound.grantedUnwritten();
    }

    int outboundRendezvous()
    {
        assert lock.isHeldByCurrentThread();
        return outbound.size();
    }

    /**
     * Teardown (send lock held): collects every committed eager frame not known delivered as {messageId, length}
     * and every rendezvous not done, and forgets queued control frames.
     */
    void drain(final List<long[]> failedFrames, final List<BufferPool.Buffer> failedRendezvous)
    {
        assert lock.isHeldByCurrentThread();
        writable.progressed();
        for (long p = ring.head(); p < ring.tail(); )
        {
            final int index = ring.indexOf(p);
            if (ring.frameType(index) == Wire.FRAME_DATA)
            {
                failedFrames.add(new long[] {ring.frameId(index), ring.frameLength(index)});
            }
            p += ring.frameSize(index);
        }
        rendezvousSender.drain(failedFrames, failedRendezvous);
        abortsQueued = 0;
        controlQueue.clear();
    }

    /** A CTS arrived (poller thread). */
    void onClearToSend(final ControlFrameFlyweight frame)
    {
        rendezvousSender.onClearToSend(frame);
    }

    /** @return whether a direct write is announced and not yet written (racy read; poller thread). */
    boolean hasDirectWriteAnnounced()
    {
        return rendezvousSender.hasDirectWriteAnnounced();
    }

    /** @see RendezvousSender#tick */
    void tick(final long nowNanos)
    {
        rendezvousSender.tick(nowNanos);
    }

    /** A REFUSE arrived (poller thread): the message fails, the connection stays usable. */
    void onRefuse(final ControlFrameFlyweight frame)
    {
        rendezvousSender.onRefuse(frame);
    }

    /** Acceptor: tell the connector our receives are posted (a one-sided write needs no receive). */
    void postReadyWrite(final long remoteAddress, final int rkey) throws IOException
    {
        final int readyOffset = controlSlots * Wire.CONTROL_SLOT_LENGTH;
        control.putLong(readyOffset, Handshake.MAGIC);
        synchronized (lock)
        {
            sendRequest.reset();
            sendRequest.opcode(WrOpcode.RDMA_WRITE).wrId(TAG_READY << TAG_SHIFT).remoteAddress(remoteAddress).rkey(rkey);
            sendRequest.setSge(controlRegion, readyOffset, 8);
            final int rc = qp.postSend(sendRequest);
            if (rc != PostResult.OK)
            {
                throw new IOException("could not post the handshake's ready write: " + PostResult.toString(rc));
            }
        }
    }

    /** Connector: the first batch announces our receives. */
    void sendInitialCredits()
    {
        synchronized (lock)
        {
            flush();
        }
    }

    /** @return OK if the connection takes messages, else NOT_CONNECTED (it failed) or CLOSED (send lock held). */
    int connectedResult()
    {
        assert lock.isHeldByCurrentThread();
        final int s = connection.state();
        return s == EngineConnection.STATE_CONNECTED ? OK : s == EngineConnection.STATE_FAILED ? NOT_CONNECTED : CLOSED;
    }

    /** A claim found no room: writable callbacks wait for progress from now on (send lock held). */
    int backPressured()
    {
        assert lock.isHeldByCurrentThread();
        writable.backPressured();
        return BACK_PRESSURED;
    }

    /** Something progressed (send lock held): writable callbacks waiting since a back-pressure may run. */
    void progressed()
    {
        assert lock.isHeldByCurrentThread();
        writable.progressed();
    }

    /** @return the next message id (send lock held). */
    long nextMessageId()
    {
        assert lock.isHeldByCurrentThread();
        return nextMessageId++;
    }

    /** A claim was handed out (send lock held): the connection is not drained until it is committed or aborted. */
    void claimOpened()
    {
        assert lock.isHeldByCurrentThread();
        outstandingClaims++;
    }

    /** Queues an ABORT for a granted rendezvous (send lock held); it counts against the peer's limit until posted. */
    void enqueueAbort(final int id)
    {
        assert lock.isHeldByCurrentThread();
        enqueueControl(Wire.CONTROL_ABORT, 0, id, 0, 0, 0);
        abortsQueued++;
    }

    /**
     * Wraps the caller's claim around the space: the message id is its token; an eager frame's ring index is
     * {@code claim.offset() - FRAME_HEADER_LENGTH}; a rendezvous claim's pool buffer (which knows its RTS frame)
     * is the claim's transport state, null for an eager one.
     *
     * @see Connection#tryClaim
     */
    int tryClaim(final int length, final WriteClaim claim)
    {
        if (length < 0)
        {
            throw new IllegalArgumentException("negative length " + length);
        }
        if (length > sendEagerLimit)
        {
            return length > connection.config.maxOutboundMessageSize() ? TOO_LARGE : rendezvousSender.tryClaim(length, claim);
        }
        final int frameLength = Wire.dataFrameLength(length);
        final int index;
        final long id;
        synchronized (lock)
        {
            final int rc = connectedResult();
            if (rc != OK)
            {
                return rc;
            }
            rendezvousSender.eagerClaim(); // an announced message must not be overtaken: it is given up instead
            index = ring.claim(frameLength);
            if (index < 0)
            {
                return backPressured();
            }
            id = nextMessageId++;
            ring.writeHeader(index, length, -Wire.FRAME_DATA, id);
            outstandingClaims++;
        }
        claim.transportState(null);
        claim.wrapShared(ring.byteBuffer(), index + Wire.FRAME_HEADER_LENGTH, length, this, id);
        return OK;
    }

    /**
     * {@link WriteClaim#commit()}: CLOSED if the connection was closed before this commit (the message is lost). A
     * close that follows the commit, e.g. the peer reacting to this very message, does not unsend it: OK, as for any
     * message sent just before a close.
     */
    @Override
    public int commit(final WriteClaim claim)
    {
        final boolean closedBefore = connection.isClosed();
        final BufferPool.Buffer rendezvous = (BufferPool.Buffer)claim.transportState();
        claim.transportState(null);
        if (rendezvous != null)
        {
            rendezvous.attachment = claim.attachment();
            commit(rendezvous.frameIndex, rendezvous);
        }
        else
        {
            commit(claim.offset() - Wire.FRAME_HEADER_LENGTH, null);
        }
        return closedBefore ? CLOSED : OK;
    }

    /** {@link WriteClaim#abort()}: gives the claimed space back without sending anything. */
    @Override
    public void abort(final WriteClaim claim)
    {
        final BufferPool.Buffer rendezvous = (BufferPool.Buffer)claim.transportState();
        claim.transportState(null);
        abort(rendezvous != null ? rendezvous.frameIndex : claim.offset() - Wire.FRAME_HEADER_LENGTH, claim.length(),
            rendezvous);
    }

    private void commit(final int frameIndex, final BufferPool.Buffer rendezvous)
    {
        boolean lost = false;
        synchronized (lock)
        {
            outstandingClaims--;
            if (connection.state() >= EngineConnection.STATE_CLOSED)
            {
                lost = true;
            }
            else if (rendezvous != null)
            {
                rendezvousSender.committed(frameIndex, rendezvous);
            }
            else
            {
                ring.frameType(frameIndex, Wire.FRAME_DATA);
                flush();
            }
        }
        if (lost)
        {
            final long id = rendezvous != null ? rendezvous.messageId : ring.frameId(frameIndex);
            final int length = rendezvous != null ? rendezvous.length : ring.frameLength(frameIndex);
            if (rendezvous != null)
            {
                rendezvousSender.release(rendezvous);
            }
            connection.reportFailedSend(id, length, connection.lostCause());
            connection.maybeReleaseResources();
        }
    }

    private void abort(final int frameIndex, final int length, final BufferPool.Buffer rendezvous)
    {
        boolean terminal;
        boolean release = rendezvous != null && !rendezvous.direct;
        synchronized (lock)
        {
            outstandingClaims--;
            terminal = connection.state() >= EngineConnection.STATE_CLOSED;
            if (rendezvous != null && rendezvous.direct)
            {
                rendezvousSender.abortedDirect(rendezvous, terminal);
            }
            else if (rendezvous != null && rendezvous.early)
            {
                // Its RTS is out: ABORT once granted; the buffer goes back now or when the RTS is answered.
                release = rendezvousSender.abortedEarly(rendezvous, terminal);
            }
            else if (!terminal && frameIndex >= 0)
            {
                ring.frameLength(frameIndex, rendezvous != null ? Wire.FRAME_HEADER_LENGTH : Wire.dataFrameLength(length));
                ring.frameType(frameIndex, Wire.FRAME_PAD);
                flush();
            }
        }
        if (release)
        {
            rendezvousSender.release(rendezvous);
        }
        if (terminal)
        {
            connection.maybeReleaseResources();
        }
    }

    /**
     * Posts everything that may go now: a pending rendezvous write, then batches of control frames
     * and committed data frames, as credits allow. Called with the send lock held.
     */
    void flush()
    {
        assert lock.isHeldByCurrentThread();
        if (connection.state() >= EngineConnection.STATE_CLOSED || qp == null || connection.isDisconnected())
        {
            return;
        }
        while (true)
        {
            while (outbound.nextWrite() != null && window.canSendData())
            {
                if (signaledInFlight >= maxSignaledInFlight)
                {
                    sendCqStalled = true;
                    return;
                }
                if (!postRendezvousWrite(outbound.nextWrite()))
                {
                    return;
                }
                outbound.writePosted();
            }
            if (ring.skipPadding())
            {
                if (sendsInFlight == 0)
                {
                    ring.release(ring.posted());
                    writable.progressed();
                }
                else
                {
                    batchEnds[(int)((sendSeq - 1) % controlSlots)] = ring.posted();
                }
            }
            // An eager frame behind a rendezvous waits until that rendezvous is written, so that it
            // cannot overtake it; further RTS may go ahead (their writes follow in RTS order).
            final int controlFrames = Math.min(controlQueue.size(), Wire.MAX_CONTROL_FRAMES_PER_BATCH);
            int dataLength = 0;
            if (window.canSendData())
            {
                final int budget = Wire.receiveSlotLength(peerEagerLimit) - Wire.BATCH_HEADER_LENGTH -
                    controlFrames * Wire.CONTROL_FRAME_LENGTH;
                dataLength = ring.batchLength(budget, outbound.outstanding() + abortsQueued,
                    EngineConnection.MAX_PIPELINED_RENDEZVOUS);
            }
            else if (ring.hasUnposted() && !creditStalled)
            {
                creditStalled = true;
                stats.creditStalls.incrementRelease();
            }
            if (dataLength == 0)
            {
                final boolean creditReturnDue = window.creditReturnDue() || (!connection.acceptor && sendSeq == 0);
                if (controlFrames == 0 && !creditReturnDue)
                {
                    return;
                }
                if (!window.canSendControlOnly())
                {
                    return;
                }
            }
            if (signaledInFlight >= maxSignaledInFlight)
            {
                // Reaping the send CQ (poller) resumes the flush.
                if (!sendCqStalled)
                {
                    sendCqStalled = true;
                    stats.sendQueueStalls.incrementRelease();
                }
                return;
            }
            if (!postBatch(controlFrames, dataLength))
            {
                return;
            }
        }
    }

    private boolean postBatch(final int controlFrames, final int dataLength)
    {
        final long seq = sendSeq;
        final int slot = (int)(seq % controlSlots);
        final int base = slot * Wire.CONTROL_SLOT_LENGTH;
        outboundHeader.wrap(control, base)
            .credits(window.owed())
            .controlLength(controlFrames * Wire.CONTROL_FRAME_LENGTH)
            .sequence(seq);
        final boolean carriesClose = controlQueue.copyTo(control, base + Wire.BATCH_HEADER_LENGTH, controlFrames);
        final SendRequest req = sendRequest;
        req.reset();
        req.wrId((TAG_SEND << TAG_SHIFT) | seq);
        req.opcode(WrOpcode.SEND);
        req.setSge(controlRegion, base, Wire.BATCH_HEADER_LENGTH + controlFrames * Wire.CONTROL_FRAME_LENGTH);
        final int start = ring.indexOf(ring.posted());
        if (dataLength > 0)
        {
            req.addSge(ring.region().address() + start, dataLength, ring.region().lkey());
        }
        // Unsignaled only if the next batch can follow at once: more data in the ring, credits and room for it, and
        // no rendezvous write to go first; so a stalled sender's last SEND is signaled and its ring space comes back.
        // On a QP that completes at post (shm) only CLOSE asks for a completion (the close waits for it): the others
        // are complete when postSend returns, and their ring space comes back at once, with no send CQ traffic.
        final boolean signaled = carriesClose || !completesAtPost && (unsignaledSinceSignaled + 1 >= SIGNAL_EVERY ||
            signaledInFlight + 2 >= maxSignaledInFlight || ring.posted() + dataLength >= ring.tail() ||
            !window.canSendDataAfterNextBatch() || outbound.nextWrite() != null);
        req.flags(signaled ? SendRequest.FLAG_SIGNALED : 0);
        window.beforePost();
        final int rc = qp.postSend(req);
        if (rc != PostResult.OK)
        {
            connection.failLater(new PeerDisconnectedException("posting a SEND to " + connection.remoteAddress() +
                " failed: " + PostResult.toString(rc)));
            return false;
        }
        if (dataLength > 0)
        {
            countEagerFrames(start, dataLength);
            creditStalled = false;
        }
        else
        {
            stats.creditOnlySends.incrementRelease();
        }
        stats.sendsPosted.incrementRelease();
        window.onBatchPosted();
        if (abortsQueued > 0)
        {
            abortsQueued -= controlQueue.count(Wire.CONTROL_ABORT, controlFrames);
        }
        controlQueue.remove(controlFrames);
        ring.markPosted(dataLength);
        batchEnds[slot] = ring.posted();
        sendSeq++;
        sendsInFlight++;
        signaledInFlight++;
        if (signaled)
        {
            unsignaledSinceSignaled = 0;
        }
        else
        {
            unsignaledSinceSignaled++;
            stats.unsignaledSends.incrementRelease();
        }
        if (carriesClose)
        {
            closeBatchSeq = seq;
        }
        if (!signaled && completesAtPost && req.completedAtPost())
        {
            sendCompleted(seq);
        }
        return true;
    }

    /**
     * SEND {@code seq} completed (send lock held): it and the unsignaled SENDs posted before it (a send queue completes
     * in order) give their ring space back and leave the in-flight counts.
     */
    private void sendCompleted(final long seq)
    {
        final int covered = (int)(seq + 1 - completedSeq);
        if (covered > 0)
        {
            completedSeq = seq + 1;
            ring.release(batchEnds[(int)(seq % controlSlots)]);
            sendsInFlight -= covered;
            signaledInFlight -= covered;
            writable.progressed();
            if (closeBatchSeq >= 0 && closeBatchSeq <= seq)
            {
                closeSendCompleted = true;
            }
        }
    }

    private void countEagerFrames(final int start, final int dataLength)
    {
        int offset = start;
        final int end = start + dataLength;
        while (offset < end)
        {
            final int type = ring.frameType(offset);
            final int length = ring.frameLength(offset);
            if (type == Wire.FRAME_DATA)
            {
                stats.eagerMessagesSent.incrementRelease();
                stats.eagerBytesSent.getAndAddRelease(length);
            }
            else if (type == Wire.FRAME_RTS)
            {
                outbound.rtsPosted((int)ring.frameId(offset));
            }
            offset += Wire.frameSize(type, length);
        }
    }

    private boolean postRendezvousWrite(final BufferPool.Buffer buffer)
    {
        final SendRequest req = sendRequest;
        req.reset();
        req.opcode(WrOpcode.RDMA_WRITE_WITH_IMM)
            .immData(buffer.id)
            .remoteAddress(buffer.remoteAddress)
            .rkey(buffer.remoteRkey)
            .wrId((TAG_WRITE << TAG_SHIFT) | (buffer.id & 0xFFFF_FFFFL));
        if (!buffer.direct)
        {
            req.setSge(buffer.region, 0, buffer.length); // a direct write is in place: zero-length, a notification
        }
        window.beforePost();
        final int rc = qp.postSend(req);
        if (rc != PostResult.OK)
        {
            connection.failLater(new PeerDisconnectedException(
                "posting a rendezvous write to " + connection.remoteAddress() + " failed: " + PostResult.toString(rc)));
            return false;
        }
        window.onWritePosted();
        signaledInFlight++;
        return true;
    }

    /** Queues a control frame (send lock held); it leaves with the next batch. */
    void enqueueControl(final int type, final int code, final long id, final long address, final int rkey, final int length)
    {
        assert lock.isHeldByCurrentThread();
        controlQueue.add(type, code, id, address, rkey, length);
    }

    /** @see Connection#onWritable */
    void onWritable(Runnable callback)
    {
        synchronized (lock)
        {
            if (!connection.closeCallbacksRun())
            {
                writable.add(callback);
                callback = null;
            }
        }
        if (callback != null)
        {
            callback.run(); // closed: no poller will look at this connection again; the retry sees CLOSED
            return;
        }
        connection.requestAttention();
    }

    void onSendBufferReleased()
    {
        synchronized (lock)
        {
            writable.progressed();
        }
        if (writable.hasWaiters())
        {
            connection.requestAttention();
        }
    }

    /** Runs writable callbacks if anything progressed since the last back-pressure. Poller thread. */
    void fireWritable()
    {
        writable.fire();
    }

    void onSendCompletions(final WorkCompletions wc, final int n)
    {
        for (int i = 0; i < n; i++)
        {
            final WcStatus status = wc.status(i);
            final long wrId = wc.wrId(i);
            final long tag = wrId >>> TAG_SHIFT;
            if (status != WcStatus.SUCCESS)
            {
                connection.onErrorCompletion(status,
                    tag == TAG_WRITE ? "rendezvous write" : tag == TAG_READY ? "ready write" : "SEND");
                continue;
            }
            if (tag == TAG_SEND)
            {
                final long seq = wrId & ID_MASK;
                synchronized (lock)
                {
                    stats.sendCompletions.incrementRelease();
                    sendCompleted(seq);
                }
            }
            else if (tag == TAG_WRITE)
            {
                final int id = (int)(wrId & 0xFFFF_FFFFL);
                final BufferPool.Buffer buffer;
                synchronized (lock)
                {
                    signaledInFlight--;
                    buffer = outbound.onWriteCompleted(id);
                    if (buffer != null)
                    {
                        rendezvousSender.writeCompleted(buffer);
                    }
                }
                if (buffer != null && !buffer.direct)
                {
                    rendezvousSender.pool().release(buffer);
                }
            }
        }
        synchronized (lock)
        {
            if (sendCqStalled)
            {
                sendCqStalled = false;
                flush();
            }
        }
    }

    /** @return how many credits a correct peer may have returned in all so far (any thread; see {@link CreditWindow}) */
    long creditReturnLimit()
    {
        return window.returnLimit();
    }

    /**
     * The receive side finished a poll (one lock for both): its batches returned {@code returned} credits and it
     * re-posted {@code reposted} receives, now owed to the peer; then sends what may go.
     *
     * @return false if those credits are more than the peer has receives (they are not taken; the re-posted ones are)
     */
    boolean afterReceives(final long returned, final int reposted)
    {
        synchronized (lock)
        {
            final boolean valid = returned == 0 || returned <= Integer.MAX_VALUE && window.onCreditsReturned((int)returned);
            window.onReceivesReposted(reposted);
            flush();
            return valid;
        }
    }

    @Override
    public void clearToSend(final int id, final long address, final int rkey, final int length)
    {
        synchronized (lock)
        {
            enqueueControl(Wire.CONTROL_CTS, 0, id, address, rkey, length);
        }
    }

    @Override
    public void refuse(final int id, final int code, final int limit)
    {
        synchronized (lock)
        {
            enqueueControl(Wire.CONTROL_REFUSE, code, id, 0, 0, limit);
        }
    }
}
