package io.reverb.rdma.provider.tcp;

import io.reverb.common.LogLimiter;
import io.reverb.rdma.provider.base.AbstractQueuePair;
import io.reverb.rdma.verbs.PostResult;
import io.reverb.rdma.verbs.QpState;
import io.reverb.rdma.verbs.QueuePairAttributes;
import io.reverb.rdma.verbs.RecvRequest;
import io.reverb.rdma.verbs.SendRequest;
import io.reverb.rdma.verbs.WcOpcode;
import io.reverb.rdma.verbs.WcStatus;
import io.reverb.rdma.verbs.WrOpcode;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import javax.net.ssl.SSLSession;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * An RC queue pair of the tcp fabric: one TCP socket, driven by the context's NIC thread
 * ({@link TcpNic}).
 *
 * <p>Posting threads fill rings: the send queue (work requests with their local SGEs checked and resolved at
 * post time) and the receive queue. A thread that posts a request and finds the QP's wire lock
 * ({@link TcpWireLock}) free writes it to the socket itself, at once; otherwise it nudges the NIC thread, which
 * holds the lock and writes it before it sleeps. Either way the {@link TcpTransmitter} frames requests
 * ({@link TcpFrame}) and writes them with one gathering write, large payloads straight from registered memory.
 * On the target side the reader ({@link TcpInbound}: the NIC thread, or the poller of the receive CQ while it keeps
 * polling, see {@link #pollSocket}) parses frames out of a staging buffer (a large payload is
 * read from the socket straight into its destination), checks rkey, bounds, access and PD before touching memory,
 * places SEND data into the next posted receive, and answers every request in order (ACK, NAK or the data of a
 * READ); a lone ACK waits briefly for a request of this side to ride on. The requester completes its oldest
 * outstanding request on each answer. Completions are produced by the reader, except that requests posted to a QP in
 * ERROR are flushed by the posting thread at once. All socket I/O goes through a {@link TcpLink}.
 *
 * <p>Semantics are the shm provider's:
 * <ul>
 *   <li>A SEND larger than the posted receive: the receiver gets LOC_LEN_ERR, the sender
 *       REM_INV_REQ_ERR. A receive whose SGE is invalid: receiver LOC_PROT_ERR, sender REM_OP_ERR.</li>
 *   <li>RNR: the target's NIC holds a SEND (or WRITE_WITH_IMM) that finds no receive for the
 *       sender's {@link io.reverb.rdma.verbs.VerbsConfig#rnrRetryNanos()} (told in the handshake),
 *       reading nothing more from that socket meanwhile, then answers RNR_RETRY_EXC_ERR.</li>
 *   <li>Any error completion ends the connection on both sides: the QP goes to ERROR before the
 *       error completion is published, outstanding requests and receives are flushed with
 *       WR_FLUSH_ERR (sends always complete when flushed, signaled or not), later requests are
 *       flushed, the socket is half-closed once the answer that carries the error is written (the
 *       peer sees EOF and goes down too) and the disconnect handler runs once, on the NIC thread
 *       after the flush. {@link #close()} does not wait for any of this.</li>
 *   <li>{@code maxSendWr} bounds requests not yet answered; beyond it postSend answers QUEUE_FULL.</li>
 * </ul>
 */
final class TcpQueuePair extends AbstractQueuePair<TcpProtectionDomain, TcpCompletionQueue>
{
    /** {@link #pollSocket} results; POLL_WIRE_TAKEN: another thread held the wire, which says nothing of idleness. */
    static final int POLL_WIRE_TAKEN = -1;
    static final int POLL_IDLE = 0;
    static final int POLL_MOVED = 1;
    private static final Logger LOG = LoggerFactory.getLogger(TcpQueuePair.class);
    /** Once per connection, but a peer may reconnect to break it again: a burst, then a line per interval. */
    private static final LogLimiter PROTOCOL_ERRORS = new LogLimiter((line, t) -> LOG.warn(line, t));
    private static final LogLimiter HANDLER_FAILURES = new LogLimiter((line, t) -> LOG.error(line, t));
    /**
     * How long the poller that reads this socket may go without polling before the NIC takes the reading back (a
     * poller that stopped without arming its CQ: stuck in a handler, descheduled, or a program that polls no more).
     */
    static final long POLLER_LEASE_NANOS = 20_000_000;

    private final TcpVerbsContext context;
    private final TcpNic nic;
    private final TcpLink link;

    private final Object sendLock = new Object();
    private final Object recvLock = new Object();
    private volatile boolean closed;
    /** Channel fires that found the wire taken ({@link #channelKeyFired}): written by the poller thread only. */
    private volatile long channelFiresDeferred;

    private final TcpSendQueue sq;
    private final TcpRecvQueue rq;
    private boolean recvFlushed;
    private boolean sendFlushed;

    /**
     * Guards everything below: the NIC thread holds it for its work on this QP, and a posting thread that finds
     * it free writes its request to the socket itself (no hand-over to the NIC thread).
     */
    private final TcpWireLock wire = new TcpWireLock();
    /**
     * peerGone is delivering the peer's last bytes (wire lock held); an EOF met meanwhile clears it, and going down is
     * left to that peerGone.
     */
    private boolean drainingLeftovers;
    private SelectionKey key;
    private int interestOps;
    private boolean down;
    private boolean socketClosed;
    private boolean outputShut;
    private boolean writeBlocked;

    // Answers owed to the peer, in request order.
    private final TcpAnswerQueue answers;

    // Outbound staging and the payload being copied into it.
    private final TcpTransmitter transmitter;

    // Parsing and acting on what the peer sends.
    private final TcpInbound inbound;

    // Who reads the socket: the NIC, or the poller of the receive CQ (then no message wakes the NIC thread).
    private final TcpReadOwner reader;

    // Holding a lone ACK for a request to ride on.
    private final TcpAckHold ackHold;

    // The socket's local and remote addresses (reverb:// binds its claims to them).
    private volatile InetSocketAddress[] sockets;

    TcpQueuePair(
        final TcpVerbsContext context,
        final int qpNum,
        final QueuePairAttributes attributes,
        final TcpLink link,
        final TcpHandshake peer,
        final String remoteAddress)
    {
        super(qpNum, attributes, remoteAddress, QpState.RTS);
        this.context = context;
        this.nic = context.nic();
        remotePrivateData(peer.privateDataBuffer());
        this.link = link;

        this.sq = new TcpSendQueue(attributes.maxSendWr());
        this.rq = new TcpRecvQueue(attributes.maxRecvWr());
        this.answers = new TcpAnswerQueue(peer.maxSendWr);
        this.transmitter = new TcpTransmitter(sq, answers);
        this.ackHold = new TcpAckHold(peer.maxSendWr, context.config().tcpAckHoldNanos());
        this.inbound = new TcpInbound(this, context, pd, link, sq, rq, peer.rnrRetryNanos);
        this.reader = new TcpReadOwner(recvCq.tcpChannel(), wire);
    }

    /** Set once by the context before the QP is handed out: the socket's own addresses. */
    void socketAddresses(final InetSocketAddress local, final InetSocketAddress remote)
    {
        this.sockets = local == null || remote == null ? null : new InetSocketAddress[] {local, remote};
    }

    @Override
    public InetSocketAddress[] socketAddresses()
    {
        final InetSocketAddress[] s = sockets;
        return s == null ? null : s.clone();
    }

    @Override
    public SSLSession sslSession()
    {
        return link instanceof TlsTcpStream ? ((TlsTcpStream)link).session() : null;
    }

    // Posting (any thread)

    /**
     * Not supported, the engine falls back to signaled SENDs: a SEND is queued for the socket and written later: its
     * completion says when it left.
     */
    @Override
    public boolean completesAtPost()
    {
        return false;
    }

    @Override
    public int postSend(final SendRequest request)
    {
        synchronized (sendLock)
        {
            final int checked = checkSend(request, closed);
            if (checked != PostResult.OK)
            {
                return checked;
            }
            final WrOpcode opcode = request.opcode();
            final long total = request.totalLength();
            if (sendFlushed)
            {
                // goDown() flushed the queue under sendLock; what is posted later is flushed here, in order.
                return sendCq.offer(request.wrId(), WcStatus.WR_FLUSH_ERR, opcode.completionOpcode(), 0, 0, 0,
                    qpNum, false) ? PostResult.OK : PostResult.QUEUE_FULL;
            }
            if (!sq.add(request, (int)total, context, pd))
            {
                return PostResult.QUEUE_FULL;
            }
        }
        if (wire.tryLock())
        {
            // The wire is free: write the request now, on this thread.
            boolean handOver;
            try
            {
                handOver = writeInline();
            }
            finally
            {
                wire.unlock();
            }
            if (handOver)
            {
                nic.wakeNow();
            }
        }
        else
        {
            // Whoever holds the wire (the NIC thread) sees the request before it sleeps.
            nic.wake();
        }
        return PostResult.OK;
    }

    /**
     * A posting thread's write (wire lock held).
     *
     * @return true if the NIC thread must take over now: the socket would block, or it failed
     */
    private boolean writeInline()
    {
        if (socketClosed || writeBlocked || down)
        {
            return false;
        }
        try
        {
            pumpTx(System.nanoTime());
            // The poller that reads this socket also retries the write at each poll: no need for the NIC's event.
            return writeBlocked && !reader.pollerReading();
        }
        catch (final IOException ex)
        {
            peerGone();
            return false;
        }
    }

    @Override
    public int postRecv(final RecvRequest request)
    {
        synchronized (recvLock)
        {
            final int checked = checkRecv(request, closed);
            if (checked != PostResult.OK)
            {
                return checked;
            }
            if (recvFlushed)
            {
                return recvCq.offer(request.wrId(), WcStatus.WR_FLUSH_ERR, WcOpcode.RECV, 0, 0, 0, qpNum, false) ?
                    PostResult.OK : PostResult.QUEUE_FULL;
            }
            if (!rq.add(request))
            {
                return PostResult.QUEUE_FULL;
            }
        }
        if (inbound.rnrWaiting())
        {
            nic.wake();
        }
        return PostResult.OK;
    }

    @Override
    public void disconnect()
    {
        nic.execute(() ->
        {
            wire.lock();
            try
            {
                goDown(null);
            }
            finally
            {
                wire.unlock();
            }
        });
    }

    @Override
    public void close()
    {
        synchronized (sendLock)
        {
            synchronized (recvLock)
            {
                if (closed)
                {
                    return;
                }
                closed = true;
            }
        }
        // Not waited for: a closer holding a lock that a disconnect handler wants must not deadlock.
        // Posting already answers CLOSED; the NIC flushes, runs the handler and closes the socket.
        nic.execute(this::goDownAndCloseSocket);
        context.removed(this);
    }

    // NIC thread

    /** Registers the socket with the NIC's selector. */
    void register(final Selector selector) throws IOException
    {
        wire.lock();
        try
        {
            interestOps = 0;
            key = link.selectable().register(selector, interestOps, this);
            updateReadInterest();
        }
        finally
        {
            wire.unlock();
        }
        if (context.pollerReads())
        {
            recvCq.attachReader(this);
        }
    }

    // The receive CQ's poller (see TcpCompletionQueue)

    /**
     * The poller of this QP's receive CQ reads the socket itself: parsed and completed on its thread, no hand-over to
     * the NIC. The first call takes the reading from the NIC until {@link #releaseReading()} or the lease runs out
     * ({@value #POLLER_LEASE_NANOS} ns without a call). Also writes what is staged and answers owed. Non-blocking,
     * but for the poll after arming, which yields until the wire's holder is done.
     *
     * @param sleeping whether the poller armed the CQ and sleeps in its completion channel after this poll
     * @return {@link #POLL_MOVED} (bytes read or written), {@link #POLL_IDLE} or {@link #POLL_WIRE_TAKEN} (not tried)
     */
    int pollSocket(final long now, final boolean sleeping)
    {
        if (!wire.tryLockOrYield(sleeping)) // the poll after arming waits: only it re-arms the channel's watch
        {
            return POLL_WIRE_TAKEN; // polled again soon
        }
        try
        {
            if (socketClosed || down)
            {
                return POLL_IDLE;
            }
            final boolean taken = reader.polled(now);
            if (sleeping)
            {
                reader.registerWithChannel(link.selectable(), this);
            }
            updateReadInterest();
            if (taken)
            {
                // The NIC re-selects without watching the socket (else the next message would wake it for nothing)
                // and starts timing the lease.
                nic.wake();
            }
            final boolean read = !inbound.rnrWaiting() && inbound.onReadable();
            final long writtenBefore = transmitter.written();
            if (!socketClosed)
            {
                // A write the socket refused before may go now: try it here rather than wait for the NIC's event.
                writeBlocked = false;
                doWorkLocked(now);
                if (sleeping && !socketClosed)
                {
                    beforeSleepLocked(now); // the poll after arming: nothing owed may wait for this poller
                }
            }
            return read || transmitter.written() != writtenBefore ? POLL_MOVED : POLL_IDLE;
        }
        catch (final IOException ex)
        {
            peerGone();
            return POLL_MOVED;
        }
        finally
        {
            wire.unlock();
        }
    }

    /**
     * The poller is going to sleep (it armed the CQ) or stops reading an idle socket: the NIC reads it again.
     * Never waits for the wire: if it is taken, the NIC does it on its next duty cycle.
     */
    void releaseReading()
    {
        if (!wire.tryLock())
        {
            if (reader.requestRelease())
            {
                nic.wakeNow(); // the NIC applies it (TcpReadOwner: RELEASING)
            }
            return;
        }
        try
        {
            releaseLocked();
        }
        finally
        {
            wire.unlock();
        }
    }

    /**
     * The poller's channel saw this socket readable while the poller slept: its registration fires once, until the
     * poller reads the socket again (a socket it does not read cannot keep it awake). Poller thread; never waits: if
     * another thread holds the wire (the NIC at its lease check or an ACK), the watch stays on and the channel wakes
     * the poller once more at its next select, when the wire is likely free (counted: {@link #channelFiresDeferred}).
     */
    void channelKeyFired()
    {
        if (!wire.tryLock())
        {
            channelFiresDeferred++; // the poller's thread only
            return;
        }
        try
        {
            reader.channelFired();
            updateReadInterest();
        }
        finally
        {
            wire.unlock();
        }
    }

    /** The poller armed the receive CQ and sleeps in its channel, still reading: see beforeSleepLocked. Never waits. */
    void beforePollerSleeps()
    {
        if (!wire.tryLock())
        {
            // Whoever holds the wire is at work; the NIC times held ACKs and blocked writes on its next cycle.
            nic.wakeNow();
            return;
        }
        try
        {
            if (!reader.pollerReading() || socketClosed)
            {
                return;
            }
            reader.registerWithChannel(link.selectable(), this);
            updateReadInterest();
            beforeSleepLocked(System.nanoTime());
        }
        catch (final IOException ex)
        {
            peerGone();
        }
        finally
        {
            wire.unlock();
        }
    }

    /**
     * The poller sleeps next (wire held): a held ACK leaves now (the NIC may sleep its idle time before timing it out),
     * and a write the socket refused is left to the NIC, woken to watch for the socket to drain.
     */
    private void beforeSleepLocked(final long now) throws IOException
    {
        if (ackHold.pending() && !writeBlocked)
        {
            ackHold.flushNext(true);
            pumpTx(now); // throws only when the peer is gone: then holding no longer matters
            ackHold.flushNext(false);
        }
        if (writeBlocked)
        {
            nic.wake();
        }
    }

    private void releaseLocked()
    {
        if (reader.release())
        {
            updateReadInterest();
        }
    }

    /**
     * Watches the socket for input on the NIC's selector unless the poller reads it or an RNR wait stopped
     * reading; wakes the NIC when watching starts on another thread (its selector sees the change when it next
     * selects).
     */
    void updateReadInterest()
    {
        final boolean rnr = inbound.rnrWaiting();
        final boolean watch = !reader.pollerReading() && !rnr;
        final boolean watched = (interestOps & SelectionKey.OP_READ) != 0;
        if (watch != watched)
        {
            setInterest(SelectionKey.OP_READ, watch);
            if (watch)
            {
                nic.wake();
            }
        }
        reader.updateChannelInterest(rnr);
    }

    /** Tests only: the next {@link #doWork} on the NIC thread throws this (a bug in a QP's work, staged). */
    volatile RuntimeException failNextWorkForTests;

    /**
     * One duty cycle: fail a request whose local SGEs were bad once its turn comes, resume or expire an
     * RNR wait, move queued frames to the socket.
     *
     * @return nanoseconds until this QP needs the NIC again without an event, or Long.MAX_VALUE.
     */
    long doWork(final long now)
    {
        final RuntimeException injected = failNextWorkForTests;
        if (injected != null)
        {
            failNextWorkForTests = null;
            throw injected;
        }
        if (!wire.tryLock())
        {
            if (reader.pollerAtWork())
            {
                // The poller is at work on this QP: it writes and answers too. Nothing to wait for.
                return context.pollerLeaseNanos();
            }
            wire.lock();
        }
        try
        {
            final long next = doWorkLocked(now);
            return Math.min(next, checkLease(now));
        }
        finally
        {
            wire.unlock();
        }
    }

    /**
     * NIC thread: takes the reading back from a poller that released it without the wire, or that stopped
     * polling without sleeping in its channel ({@link TcpReadOwner#leaseCheck}).
     *
     * @return nanoseconds until the lease must be checked again, or Long.MAX_VALUE
     */
    private long checkLease(final long now)
    {
        final long left = reader.leaseCheck(now, context.pollerLeaseNanos());
        if (left == TcpReadOwner.EXPIRED)
        {
            releaseLocked();
            return Long.MAX_VALUE;
        }
        return left;
    }

    private long doWorkLocked(final long now)
    {
        if (socketClosed)
        {
            return Long.MAX_VALUE;
        }
        long next = Long.MAX_VALUE;
        try
        {
            if (!down && sq.head == sq.tx && sq.tx != sq.tail && sq.localError[(int)sq.tx & sq.mask])
            {
                goDown(WcStatus.LOC_PROT_ERR);
            }
            next = inbound.serviceRnr(now);
            if (!inbound.rnrWaiting() && !socketClosed && link.hasBufferedInput())
            {
                inbound.onReadable();
            }
            if (!writeBlocked && !socketClosed)
            {
                pumpTx(now);
                if (ackHold.pending() && !down)
                {
                    next = Math.min(next, Math.max(1, ackHold.deadline() - now));
                }
            }
        }
        catch (final IOException ex)
        {
            peerGone();
        }
        return next;
    }

    /** @return true once every request posted so far is in the socket (tests: a close then drops nothing posted). */
    boolean everythingPostedWritten()
    {
        wire.lock();
        try
        {
            return sq.tx == sq.tail && !transmitter.hasPending();
        }
        finally
        {
            wire.unlock();
        }
    }

    /** @return true if {@link #doWork(long)} has something to do now. */
    boolean hasPendingWork()
    {
        if (!wire.tryLock())
        {
            if (reader.pollerAtWork())
            {
                return false;
            }
            wire.lock();
        }
        try
        {
            return hasPendingWorkLocked();
        }
        finally
        {
            wire.unlock();
        }
    }

    private boolean hasPendingWorkLocked()
    {
        if (socketClosed)
        {
            return false;
        }
        if (reader.releasePending())
        {
            return true;
        }
        if (inbound.rnrWaiting() ? rq.tail != rq.head : link.hasBufferedInput())
        {
            return true;
        }
        if (writeBlocked)
        {
            return false;
        }
        if (transmitter.hasPending() || !answers.isEmpty() && !ackHold.pending())
        {
            return true;
        }
        final long tx = sq.tx;
        return !down && tx != sq.tail && (!sq.localError[(int)tx & sq.mask] || sq.head == tx);
    }

    void onReady(final SelectionKey selected)
    {
        wire.lock();
        try
        {
            if (socketClosed || !selected.isValid())
            {
                // The poller that reads this socket met the peer's EOF and closed it after the NIC selected it.
                return;
            }
            if (selected.isReadable())
            {
                inbound.onReadable();
                reader.nicRead();
            }
            if (!socketClosed && selected.isValid() && selected.isWritable())
            {
                writeBlocked = false;
                pumpTx(System.nanoTime());
            }
        }
        catch (final IOException ex)
        {
            peerGone();
        }
        finally
        {
            wire.unlock();
        }
    }

    /** Publishes a receive completion; a failure moves the QP to ERROR first. */
    void completeReceive(
        final long wrId, final WcStatus status, final WcOpcode opcode, final int byteLen, final int imm, final int flags)
    {
        completeReceive(wrId, status, opcode, byteLen, imm, flags, false);
    }

    void completeReceive(final long wrId, final WcStatus status, final WcOpcode opcode, final int byteLen, final int imm,
        final int flags, final boolean solicited)
    {
        if (status != WcStatus.SUCCESS)
        {
            // ERROR before the error completion is visible: whoever sees it sees the QP down. Requests
            // posted meanwhile still queue up and are flushed, in order, by the goDown() that follows.
            synchronized (sendLock)
            {
                state = QpState.ERROR;
            }
        }
        if (!recvCq.offer(wrId, status, opcode, byteLen, imm, flags, qpNum, solicited))
        {
            goDown(null);
        }
    }

    /** Completes the oldest outstanding request (its answer arrived). */
    void completeHead(final WcStatus status, final int byteLen)
    {
        final long head = sq.head;
        final int i = (int)head & sq.mask;
        final boolean signaled = (sq.flags[i] & SendRequest.FLAG_SIGNALED) != 0;
        final boolean offered = !signaled && status == WcStatus.SUCCESS ||
            sendCq.offer(sq.wrId[i], status, sq.opcode[i].completionOpcode(), byteLen, 0, 0, qpNum, false);
        sq.releaseSges(i);
        sq.head = head + 1;
        if (!offered)
        {
            goDown(null);
        }
    }

    /** This side detected an error in a peer's request: answer it with a NAK and go down. */
    void fail(final WcStatus status)
    {
        respond(TcpFrame.NAK, status.value(), null, 0);
        goDown(null);
    }

    /**
     * The peer broke the protocol: log once, go down, and leave the frame (nothing after it is parsed).
     * A frame that arrives after this QP went down for another reason (e.g. its CQ overflowed and flushed
     * the send queue, so a late ACK matches nothing) is not the peer's fault and is discarded silently.
     */
    void protocolError(final String what)
    {
        if (!down)
        {
            PROTOCOL_ERRORS.log("protocol", "tcp:// peer " + remoteAddress + " broke the protocol (" + what + "); disconnecting",
                null);
        }
        goDown(null);
        inbound.discard();
    }

    /** Owes the peer an ACK for the request just acted on (merged into a run of ACKs when it can). */
    void respondAck()
    {
        final boolean first = answers.isEmpty();
        if (!answers.mergeAck())
        {
            respond(TcpFrame.ACK, 1, null, 0);
        }
        if (first && !down)
        {
            ackHold.started(System.nanoTime());
        }
    }

    /** Queues an answer owed to the peer, in request order. */
    void respond(final int type, final int value, final TcpMemoryRegion region, final int offset)
    {
        if (down)
        {
            return;
        }
        if (!answers.add(type, value, region, offset))
        {
            protocolError("more requests unanswered than the peer's send queue holds");
        }
    }

    /** Moves staged frames to the socket, staging more as it drains, until it would block. */
    private void pumpTx(final long now) throws IOException
    {
        if (outputShut || socketClosed)
        {
            return;
        }
        final boolean hold = ackHold.hold(now, answers.loneAcks(), down);
        if (!transmitter.write(link, down, hold) || !link.flush())
        {
            writeBlocked = true;
            setInterest(SelectionKey.OP_WRITE, true);
            return;
        }
        setInterest(SelectionKey.OP_WRITE, false);
        ackHold.written(hold, answers.isEmpty());
        if (down && answers.isEmpty())
        {
            // Everything owed is written (the NAK last): tell the peer with EOF, keep reading to its EOF.
            outputShut = true;
            link.shutdownOutput();
        }
    }

    /** Turns interest in a socket event on or off. */
    void setInterest(final int op, final boolean on)
    {
        final int ops = on ? interestOps | op : interestOps & ~op;
        if (ops != interestOps && key != null && key.isValid())
        {
            interestOps = ops;
            key.interestOps(ops);
        }
    }

    /**
     * EOF or an error on the socket: the peer is gone. What it sent before it went and this side has not read yet
     * (a write that failed on the peer's reset comes first when nobody read the socket for a while) is delivered
     * first, into the receives posted: a NIC delivers what it placed before the connection broke, and a server's
     * GOAWAY followed by its close must not become a lost connection.
     */
    void peerGone()
    {
        if (drainingLeftovers && wire.isHeldByCurrentThread())
        {
            // the drain below, on this thread, met the end of the stream: it goes down once it returns (another
            // thread that finds the peer gone meanwhile waits for the wire, then finds the QP down)
            drainingLeftovers = false;
            return;
        }
        wire.lock();
        try
        {
            drainingLeftovers = !down && !socketClosed;
            if (drainingLeftovers)
            {
                inbound.deliverLeftovers();
            }
        }
        finally
        {
            drainingLeftovers = false;
            goDownAndCloseSocket();
            wire.unlock();
        }
    }

    /** @return true while peerGone delivers the peer's last bytes and the stream has not ended (wire lock held). */
    boolean drainingLeftovers()
    {
        return drainingLeftovers;
    }

    /** Under the wire lock: the QP goes down (completions flushed, handler run) and its socket is closed. */
    private void goDownAndCloseSocket()
    {
        wire.lock();
        try
        {
            goDown(null);
            closeSocket();
        }
        finally
        {
            wire.unlock();
        }
    }

    /**
     * Moves the QP to ERROR once: the error status (if any) completes the oldest outstanding request,
     * everything else outstanding is flushed, the disconnect handler runs, and the answers still owed
     * (the NAK) are written before the socket is half-closed.
     */
    void goDown(final WcStatus headStatus)
    {
        if (down)
        {
            return;
        }
        down = true;
        inbound.stop();
        synchronized (sendLock)
        {
            state = QpState.ERROR;
            long head = sq.head;
            final long tail = sq.tail;
            if (headStatus != null && head != tail)
            {
                final int i = (int)head & sq.mask;
                sendCq.offer(sq.wrId[i], headStatus, sq.opcode[i].completionOpcode(), 0, 0, 0, qpNum, false);
                sq.releaseSges(i);
                head++;
            }
            for (; head != tail; head++)
            {
                final int i = (int)head & sq.mask;
                sendCq.offer(sq.wrId[i], WcStatus.WR_FLUSH_ERR, sq.opcode[i].completionOpcode(), 0, 0, 0, qpNum, false);
                sq.releaseSges(i);
            }
            sq.head = head;
            sq.tx = head;
            sendFlushed = true;
        }
        synchronized (recvLock)
        {
            recvFlushed = true;
            long head = rq.head;
            final long tail = rq.tail;
            for (; head != tail; head++)
            {
                recvCq.offer(rq.wrId[(int)head & rq.mask], WcStatus.WR_FLUSH_ERR, WcOpcode.RECV, 0, 0, 0, qpNum, false);
            }
            rq.head = head;
        }
        if (!socketClosed)
        {
            // Read on to the peer's EOF, on the NIC thread.
            reader.release();
            updateReadInterest();
            try
            {
                pumpTx(System.nanoTime());
            }
            catch (final IOException ex)
            {
                closeSocket();
            }
        }
        final Runnable handler = disconnectHandler;
        if (handler != null)
        {
            nic.schedule(() ->
            {
                try
                {
                    handler.run();
                }
                catch (final Throwable t)
                {
                    HANDLER_FAILURES.log("disconnect", "disconnect handler of " + this + " threw", t);
                }
            });
        }
    }

    /** @return who reads the socket (tests) */
    TcpReadOwner readOwner()
    {
        return reader;
    }

    /** @return true while a frame waits for a receive to be posted (tests) */
    boolean inboundRnrWaiting()
    {
        return inbound.rnrWaiting();
    }

    /** @return true once the QP went down (ERROR): nothing more is parsed or answered. */
    boolean isDown()
    {
        return down;
    }

    /** Closes the socket; the QP needs the NIC no more. */
    void closeSocket()
    {
        if (socketClosed)
        {
            return;
        }
        socketClosed = true;
        if (key != null)
        {
            key.cancel();
        }
        reader.close();
        try
        {
            link.close();
        }
        catch (final IOException ignore)
        {
            // Closing anyway.
        }
        transmitter.clear();
        inbound.forget();
        recvCq.detachReader(this);
        nic.removed(this);
    }

    /** @return times the channel's watch fired while another thread held the wire and stayed on (tests) */
    long channelFiresDeferred()
    {
        return channelFiresDeferred;
    }

    @Override
    public String toString()
    {
        return "TcpQueuePair{qpNum=" + qpNum + ", state=" + state + ", remote=" + remoteAddress + '}';
    }
}
