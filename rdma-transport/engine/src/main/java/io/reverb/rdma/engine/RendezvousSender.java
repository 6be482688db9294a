package io.reverb.rdma.engine;

import io.reverb.rdma.verbs.Access;
import io.reverb.rdma.verbs.ProtectionDomain;
import io.reverb.rdma.verbs.QueuePair;
import io.reverb.rdma.verbs.RemoteMapping;
import io.reverb.common.WriteClaim;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;

import static io.reverb.rdma.engine.Connection.OK;

/**
 * The rendezvous half of the send direction ({@link ConnectionSender} keeps the ring, the credits and the posting):
 * claims above the eager limit, in a buffer of this side's {@link BufferPool} or straight into the peer's grant
 * (direct writes), the CTS and REFUSE that answer their RTS, what their commit and abort do, and refusals.
 * The {@link OutboundRendezvous} (RTS awaiting CTS, writes in order) is shared with the sender, which posts the
 * writes.
 *
 * <h2>Threads</h2>
 * Everything here is guarded by the {@link SendLock} that the {@link ConnectionSender} owns and hands over at
 * construction; a method that needs it held says so and asserts it.
 *
 * <h2>Direct writes</h2>
 * When the QP can map the peer's memory ({@link QueuePair#canMapRemote()}, shm) and
 * {@link EngineConfig#directWrite()} allows it, a message above the eager limit is written by its claimant straight
 * into the receiver's granted buffer, so the fabric copies nothing:
 * <ol>
 *   <li>the first {@code tryClaim} of that length sends the RTS at once and returns {@code BACK_PRESSURED}
 *       (the writable callback follows the CTS);</li>
 *   <li>the CTS's address, key and length are checked by the provider, which maps the granted range
 *       ({@link QueuePair#mapRemote}); a grant it refuses is a protocol error;</li>
 *   <li>the retried {@code tryClaim} of the same length gets a claim over that mapping; its commit posts a
 *       zero-length RDMA_WRITE_WITH_IMM (the notification the receiver already takes for a written rendezvous),
 *       its abort an ABORT control frame (the receiver returns the buffer).</li>
 * </ol>
 * Order: the announced message holds its place. A claim of any other length while it is announced and not claimed
 * gives it up (ABORT once granted) and goes first, and large claims then copy until no rendezvous is in flight, so
 * two claimants cannot take turns abandoning each other's announcement. rpc-core never does that: after
 * {@code BACK_PRESSURED} it queues every frame behind the one it retries first. A refused announcement's retry gets
 * a claim of this side's pool whose commit reports the refusal (from the poller, with the message's attachment), as
 * a refusal after commit is reported. Close and teardown give up an announcement, and so does {@link #tick} when its
 * grant has waited for its claimant half the write timeout; a mapping is closed only once its claimant committed or
 * aborted (the memory must outlive the writer).
 *
 * <h2>Early announcement</h2>
 * A message copied through this side's pool ({@link EngineConfig#announceAtClaim(boolean)}, default) has its RTS
 * committed to the ring at its claim, so the receiver's CTS comes back while the claimant serialises the message; its
 * write waits for the commit ({@link OutboundRendezvous#nextWrite()}). What the claimant may still do meets what
 * the peer may already have answered:
 * <ul>
 *   <li>commit after CTS: the write goes at once; before CTS: it goes with the CTS;</li>
 *   <li>commit after REFUSE: the message fails with the refusal (reported from the poller, as for a direct write);</li>
 *   <li>abort after CTS: ABORT, the receiver returns its buffer; before CTS: the buffer stays announced
 *       ({@link BufferPool.Buffer#abandoned}) until the CTS (then ABORT) or REFUSE comes, and only then goes back to
 *       the pool: it cannot serve another message while its RTS is unanswered;</li>
 *   <li>teardown while it is claimed: its claimant's commit or abort returns the buffer (never the teardown: the
 *       claimant may still be writing into it).</li>
 * </ul>
 */
final class RendezvousSender
{
    /** {@link #claimDirect}: not a direct write, claim a buffer of this side's pool (not a ClaimResult code). */
    private static final int CLAIM_COPY = Integer.MIN_VALUE;

    private final ConnectionSender sender;
    private final EngineConnection connection;
    private final SendLock lock;
    private final ConnectionStats stats;
    private final SendRing ring;
    private final OutboundRendezvous outbound;

    private QueuePair qp;
    private BufferPool sendPool;

    /** Large messages are written directly into the peer's grant (the config allows it, the QP can map). */
    private boolean directWrite;
    /** Messages copied through the pool are announced at their claim ({@link EngineConfig#announceAtClaim()}). */
    private boolean announceAtClaim;
    /** The direct write announced and not yet claimed (at most one), or null. */
    private BufferPool.Buffer direct;
    /** An announcement was given up for another claim: large claims copy until no rendezvous is in flight. */
    private boolean directBackoff;
    /** An announcement was refused: its claimant's retry (same length) gets a claim that fails at commit. */
    private int refusedLength = -1;
    private int refusedCode;
    private int refusedLimit;
    /** Committed claims of refused announcements: reported by the poller (never inside the claimant's commit). */
    private final ArrayList<BufferPool.Buffer> refusedCommitted = new ArrayList<>();
    /** Mappings of the peer's grants open now. */
    private int mappingsOpen;

    RendezvousSender(
        final ConnectionSender sender,
        final EngineConnection connection,
        final SendLock lock,
        final SendRing ring,
        final OutboundRendezvous outbound)
    {
        this.sender = sender;
        this.connection = connection;
        this.lock = lock;
        this.stats = connection.statsRef();
        this.ring = ring;
        this.outbound = outbound;
    }

    /** Completes set-up once the QP exists: the send pool, and whether large messages are written directly. */
    void attach(final QueuePair qp, final ProtectionDomain pd) throws IOException
    {
        final EngineConfig config = connection.config;
        this.qp = qp;
        this.sendPool = new BufferPool(pd, Access.LOCAL_WRITE, config.rendezvousMinClass(), config.rendezvousMaxClass(),
            config.rendezvousPoolBytes(), sender::onSendBufferReleased);
        this.directWrite = config.directWrite() && qp.canMapRemote();
        this.announceAtClaim = config.announceAtClaim();
    }

    BufferPool pool()
    {
        return sendPool;
    }

    /** @return true if large messages are written straight into the peer's grants on this connection. */
    boolean directWrite()
    {
        return directWrite;
    }

    /** @return mappings of the peer's grants open now (send lock held; tests: 0 when idle). */
    int mappingsOpen()
    {
        assert lock.isHeldByCurrentThread();
        return mappingsOpen;
    }

    /** @return true (send lock held) if committed messages of refused announcements wait to be reported. */
    boolean hasRefusedCommitted()
    {
        assert lock.isHeldByCurrentThread();
        return !refusedCommitted.isEmpty();
    }

    /** Reports, outside the lock, the committed messages whose announcement the peer had refused (poller). */
    void reportRefusedCommitted()
    {
        while (true)
        {
            final BufferPool.Buffer buffer;
            synchronized (lock)
            {
                if (refusedCommitted.isEmpty())
                {
                    return;
                }
                buffer = refusedCommitted.remove(refusedCommitted.size() - 1);
            }
            reportRefused(buffer, buffer.refusedCode, buffer.refusedLimit);
        }
    }

    /** The connection's state changed (send lock held): closing gives up an announcement. */
    void stateChanged()
    {
        assert lock.isHeldByCurrentThread();
        if (direct != null && connection.state() != EngineConnection.STATE_CONNECTED)
        {
            abandonDirect();
        }
    }

    /** Teardown (send lock held): collects every rendezvous not done and forgets the announcement and refusals. */
    void drain(final List<long[]> failedFrames, final List<BufferPool.Buffer> failedRendezvous)
    {
        assert lock.isHeldByCurrentThread();
        final int first = failedRendezvous.size();
        outbound.drainTo(failedRendezvous);
        // Direct writes own no pool buffer: a committed one fails like any message; one being written is left to its
        // claimant's commit or abort (the mapping must outlive the writer); one never claimed just goes.
        for (int i = failedRendezvous.size() - 1; i >= first; i--)
        {
            final BufferPool.Buffer b = failedRendezvous.get(i);
            if (b.early && !b.committed)
            {
                // Announced at its claim, not committed: its claimant may still write into it, and its commit or
                // abort returns it; one its claimant gave up just goes back (there is no message to fail).
                failedRendezvous.remove(i);
                if (b.abandoned)
                {
                    sendPool.release(b);
                }
                continue;
            }
            if (b.direct)
            {
                failedRendezvous.remove(i);
                if (b.claimed && !b.committed)
                {
                    continue;
                }
                unmap(b);
                if (b.committed)
                {
                    failedFrames.add(new long[] {b.messageId, b.length});
                }
            }
        }
        for (final BufferPool.Buffer refused : refusedCommitted)
        {
            refused.refusedCode = 0;
            failedRendezvous.add(refused);
        }
        refusedCommitted.clear();
        direct = null;
        refusedLength = -1;
    }

    /** A CTS arrived (poller thread). */
    void onClearToSend(final ControlFrameFlyweight frame)
    {
        synchronized (lock)
        {
            final String error = outbound.onClearToSend(frame.id(), frame.length(), frame.address(), frame.rkey());
            if (error != null)
            {
                connection.protocolErrorDeferred(error);
                return;
            }
            final BufferPool.Buffer granted = outbound.lastGranted();
            if (granted.direct)
            {
                grantedDirect(granted);
            }
            else if (granted.early && granted.abandoned)
            {
                // Its claimant aborted while the RTS was unanswered: the receiver gets its buffer back, ours goes back.
                outbound.removeGranted(granted);
                sender.enqueueAbort(granted.id);
                stats.rendezvousAbortsSent.incrementRelease();
                sendPool.release(granted);
                sender.progressed();
                sender.flush();
            }
        }
    }

    /** The CTS of a direct write arrived (send lock held): map the grant for its claimant, or give it back. */
    private void grantedDirect(final BufferPool.Buffer d)
    {
        assert lock.isHeldByCurrentThread();
        if (d.abandoned)
        {
            abortGranted(d);
            return;
        }
        // The provider checks the peer's values (key, address, bounds, access, PD) before it maps anything.
        final RemoteMapping mapping = qp.mapRemote(d.remoteAddress, d.remoteRkey, d.length);
        if (mapping == null)
        {
            connection.protocolErrorDeferred("CTS for rendezvous " + d.id + " grants memory that cannot be written (address 0x" +
                Long.toHexString(d.remoteAddress) + ", rkey 0x" + Integer.toHexString(d.remoteRkey) + ", " + d.length +
                " bytes)");
            return;
        }
        d.map(mapping);
        d.grantedAtNanos = System.nanoTime();
        mappingsOpen++;
        sender.progressed(); // its claimant may come back now
    }

    /**
     * Racy read without the lock, as {@link #tick}'s: the grant that {@link #tick} watches is made on the poller thread
     * (its CTS), which asks this before it sleeps.
     *
     * @return whether a direct write is announced and not yet written or given up.
     */
    boolean hasDirectWriteAnnounced()
    {
        return direct != null;
    }

    /**
     * Poller, now and then: gives up a grant whose claimant has not come back within half this side's
     * {@link EngineConfig#rendezvousWriteTimeoutNanos() write timeout}, before the peer (if it has the same timeout)
     * drops the connection for holding its memory. The claimant's retry announces again. The RPC layer always comes
     * back at once (from the writable callback); this is for users of the engine's own API.
     *
     * @param nowNanos {@code System.nanoTime()}.
     */
    void tick(final long nowNanos)
    {
        final long limit = connection.config.rendezvousWriteTimeoutNanos() / 2;
        if (direct == null || limit <= 0) // racy read: a tick that misses it is followed by another
        {
            return;
        }
        synchronized (lock)
        {
            final BufferPool.Buffer d = direct;
            if (d != null && d.mapping != null && nowNanos - d.grantedAtNanos > limit &&
                connection.state() == EngineConnection.STATE_CONNECTED)
            {
                abandonDirect();
            }
        }
    }

    /** An eager claim (send lock held): an announced message must not be overtaken, it is given up instead. */
    void eagerClaim()
    {
        assert lock.isHeldByCurrentThread();
        if (direct != null)
        {
            abandonDirect();
        }
    }

    /** Gives up the announced, unclaimed direct write (send lock held): ABORT if granted, else when its CTS comes. */
    private void abandonDirect()
    {
        assert lock.isHeldByCurrentThread();
        final BufferPool.Buffer d = direct;
        direct = null;
        directBackoff = true;
        if (d.mapping != null)
        {
            abortGranted(d);
        }
        else
        {
            d.abandoned = true;
        }
    }

    /** A granted direct write will not be written (send lock held): the receiver gets ABORT and returns its buffer. */
    private void abortGranted(final BufferPool.Buffer d)
    {
        assert lock.isHeldByCurrentThread();
        outbound.removeGranted(d);
        unmap(d);
        sender.enqueueAbort(d.id);
        stats.rendezvousAbortsSent.incrementRelease();
        sender.progressed();
        sender.flush();
    }

    /** Closes a direct write's mapping if still open (send lock held). */
    void unmap(final BufferPool.Buffer d)
    {
        assert lock.isHeldByCurrentThread();
        if (d.unmap())
        {
            mappingsOpen--;
        }
    }

    /** A REFUSE arrived (poller thread): the message fails, the connection stays usable. */
    void onRefuse(final ControlFrameFlyweight frame)
    {
        final long id = frame.id();
        final BufferPool.Buffer buffer;
        synchronized (lock)
        {
            buffer = outbound.onRefuse(id);
            if (buffer == null)
            {
                connection.protocolErrorDeferred("REFUSE for rendezvous " + id + " out of order");
                return;
            }
            if (buffer.direct)
            {
                // Refused before anything was claimed: there is no message yet to fail. Its claimant's retry gets a
                // claim of this side's pool that fails at commit, so that the refusal reaches the message (its
                // attachment, the reason) as a refusal after commit would.
                if (buffer == direct)
                {
                    direct = null;
                    refusedLength = buffer.length;
                    refusedCode = frame.code();
                    refusedLimit = frame.length();
                    sender.progressed();
                }
                return;
            }
            if (buffer.early && !buffer.committed)
            {
                if (buffer.abandoned)
                {
                    sendPool.release(buffer); // its claimant aborted: no message to fail
                }
                else
                {
                    // Its claimant is still writing: the commit reports the refusal, an abort just returns the buffer.
                    buffer.refusedCode = frame.code();
                    buffer.refusedLimit = frame.length();
                }
                return;
            }
        }
        reportRefused(buffer, frame.code(), frame.length());
    }

    /** Returns the buffer of a refused message and tells its sender why. */
    private void reportRefused(final BufferPool.Buffer buffer, final int code, final int limit)
    {
        final int length = buffer.length;
        final long messageId = buffer.messageId;
        final Object attachment = buffer.attachment;
        release(buffer);
        connection.reportFailedSend(messageId, length, attachment, new MessageRefusedException("message " + messageId + " of " +
            length + " bytes refused by " + connection.remoteAddress() + ": " + refusalReason(code, limit) +
            " (the connection stays usable)", limit));
    }

    static String refusalReason(final int code, final int limit)
    {
        switch (code)
        {
            case Wire.REFUSE_OVER_BUDGET:
                return "it does not fit its rendezvous memory budget of " + limit + " bytes";
            case Wire.REFUSE_NO_MEMORY:
                return "it could not register a " + limit + "-byte receive buffer (out of memory)";
            case Wire.REFUSE_TOO_LARGE:
                return "larger than its maxInboundMessageSize of " + limit + " bytes";
            default:
                return "refusal code " + code + ", limit " + limit + " bytes";
        }
    }

    /**
     * A claim above the eager limit and within {@code maxOutboundMessageSize}: a direct write's (see the class
     * comment), or a pool buffer with an RTS frame in the ring, which the buffer knows (the claim's transport state).
     *
     * @see Connection#tryClaim
     */
    int tryClaim(final int length, final WriteClaim claim)
    {
        final BufferPool.Buffer buffer;
        final int index;
        final long id;
        synchronized (lock)
        {
            final int connected = sender.connectedResult();
            if (connected != OK)
            {
                return connected;
            }
            if (directWrite)
            {
                final int result = claimDirect(length, claim);
                if (result != CLAIM_COPY)
                {
                    return result;
                }
            }
            buffer = sendPool.acquire(length);
            if (buffer == null)
            {
                return sender.backPressured();
            }
            index = ring.claim(Wire.FRAME_HEADER_LENGTH);
            if (index < 0)
            {
                sendPool.release(buffer);
                return sender.backPressured();
            }
            id = sender.nextMessageId();
            buffer.id = (int)id;
            buffer.messageId = id;
            buffer.length = length;
            buffer.early = announceAtClaim;
            buffer.committed = false;
            buffer.abandoned = false;
            buffer.refusedCode = 0;
            sender.claimOpened();
            if (announceAtClaim)
            {
                // The RTS leaves now: the CTS comes back while the claimant writes; the write waits for the commit.
                ring.writeHeader(index, length, Wire.FRAME_RTS, id);
                outbound.committed(buffer);
                sender.flush();
            }
            else
            {
                ring.writeHeader(index, length, -Wire.FRAME_RTS, id);
            }
        }
        buffer.frameIndex = index;
        claim.transportState(buffer);
        claim.wrap(buffer.byteBuffer(), 0, length, sender, id); // the pool buffer's view is this claim's until commit
        return OK;
    }

    /**
     * The direct-write claim (send lock held): hands out the granted, mapped announcement of this length; or announces one
     * (RTS now) and back-pressures; or says to copy.
     *
     * @return OK (claim wrapped), BACK_PRESSURED, or {@link #CLAIM_COPY}
     */
    private int claimDirect(final int length, final WriteClaim claim)
    {
        assert lock.isHeldByCurrentThread();
        if (refusedLength >= 0)
        {
            final boolean refused = refusedLength == length;
            refusedLength = -1;
            if (refused)
            {
                return claimRefused(length, claim);
            }
        }
        final BufferPool.Buffer d = direct;
        if (d != null)
        {
            if (d.length == length)
            {
                if (d.mapping == null)
                {
                    return sender.backPressured(); // its CTS has not arrived
                }
                direct = null;
                d.claimed = true;
                sender.claimOpened();
                d.frameIndex = -1; // no ring frame: its RTS went at the announcement
                claim.transportState(d);
                claim.wrap(d.byteBuffer(), 0, length, sender, d.messageId); // the peer's grant, mapped
                return OK;
            }
            abandonDirect(); // another message goes first: the announced one must not hold it back
        }
        if (directBackoff && outbound.isEmpty() && sender.outstandingClaims() == 0)
        {
            directBackoff = false;
        }
        if (directBackoff)
        {
            return CLAIM_COPY;
        }
        final int index = ring.claim(Wire.FRAME_HEADER_LENGTH);
        if (index < 0)
        {
            return sender.backPressured();
        }
        final long id = sender.nextMessageId();
        // Committed at once: the RTS leaves now, the message when its claimant comes back after the CTS.
        ring.writeHeader(index, length, Wire.FRAME_RTS, id);
        final BufferPool.Buffer announced = BufferPool.Buffer.direct();
        announced.id = (int)id;
        announced.messageId = id;
        announced.length = length;
        outbound.committed(announced);
        direct = announced;
        sender.flush();
        return sender.backPressured();
    }

    /**
     * The retry of a refused announcement (send lock held): a claim of this side's pool, never announced; its commit
     * reports the refusal (from the poller), its abort just returns the buffer.
     */
    private int claimRefused(final int length, final WriteClaim claim)
    {
        assert lock.isHeldByCurrentThread();
        final BufferPool.Buffer buffer = sendPool.acquire(length);
        if (buffer == null)
        {
            refusedLength = length; // still to be reported once a buffer is free
            return sender.backPressured();
        }
        final long id = sender.nextMessageId();
        buffer.id = (int)id;
        buffer.messageId = id;
        buffer.length = length;
        buffer.refusedCode = refusedCode;
        buffer.refusedLimit = refusedLimit;
        buffer.early = false;
        buffer.committed = false;
        buffer.abandoned = false;
        sender.claimOpened();
        buffer.frameIndex = -1; // no ring frame: never announced
        claim.transportState(buffer);
        claim.wrap(buffer.byteBuffer(), 0, length, sender, id);
        return OK;
    }

    /** A rendezvous claim was committed on a live connection (send lock held). */
    void committed(final int frameIndex, final BufferPool.Buffer rendezvous)
    {
        assert lock.isHeldByCurrentThread();
        if (rendezvous.direct)
        {
            rendezvous.committed = true; // its notification may go now (after the writes granted before it)
            sender.flush();
        }
        else if (rendezvous.refusedCode != 0)
        {
            rendezvous.committed = true;
            refusedCommitted.add(rendezvous);
            connection.requestAttention();
        }
        else if (rendezvous.early)
        {
            rendezvous.committed = true; // its write may go once granted (after the writes granted before it)
            if (outbound.isGranted(rendezvous))
            {
                stats.rendezvousGrantedAtCommit.incrementRelease();
            }
            sender.flush();
        }
        else
        {
            outbound.committed(rendezvous);
            ring.frameType(frameIndex, Wire.FRAME_RTS);
            sender.flush();
        }
    }

    /**
     * An early-announced claim was aborted (send lock held).
     *
     * @return true if its buffer goes back to the pool now; false if it waits for the answer to its RTS
     */
    boolean abortedEarly(final BufferPool.Buffer b, final boolean terminal)
    {
        assert lock.isHeldByCurrentThread();
        if (terminal || b.refusedCode != 0)
        {
            return true; // teardown left it to its claimant, or the peer refused it: no longer announced
        }
        if (outbound.isGranted(b))
        {
            outbound.removeGranted(b);
            sender.enqueueAbort(b.id);
            stats.rendezvousAbortsSent.incrementRelease();
            sender.progressed();
            sender.flush();
            return true;
        }
        b.abandoned = true; // its RTS is unanswered (or not yet posted): ABORT at its CTS, nothing at its REFUSE
        return false;
    }

    /** A direct write's claim was aborted (send lock held): after teardown just its mapping goes, else ABORT. */
    void abortedDirect(final BufferPool.Buffer d, final boolean terminal)
    {
        assert lock.isHeldByCurrentThread();
        if (terminal)
        {
            unmap(d); // teardown left it to us
        }
        else
        {
            abortGranted(d);
        }
    }

    /** A rendezvous write completed (send lock held): counts it; a direct write's mapping is closed. */
    void writeCompleted(final BufferPool.Buffer buffer)
    {
        assert lock.isHeldByCurrentThread();
        stats.rendezvousMessagesSent.incrementRelease();
        stats.rendezvousBytesSent.getAndAddRelease(buffer.length);
        if (buffer.direct)
        {
            stats.directWritesSent.incrementRelease();
            unmap(buffer);
        }
    }

    /** Returns a rendezvous buffer: to the pool, or for a direct write its mapping closed. */
    void release(final BufferPool.Buffer buffer)
    {
        if (buffer.direct)
        {
            synchronized (lock)
            {
                unmap(buffer);
            }
        }
        else
        {
            buffer.refusedCode = 0;
            sendPool.release(buffer);
        }
    }
}
