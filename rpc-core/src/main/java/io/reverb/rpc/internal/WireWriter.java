package io.reverb.rpc.internal;

import io.reverb.common.LogLimiter;
import io.reverb.rpc.Status;
import io.reverb.rpc.StatusCode;
import io.reverb.common.ClaimResult;
import io.reverb.rpc.transport.Connection;
import io.reverb.rpc.transport.ConnectionHandler;
import io.reverb.common.WriteClaim;
import io.reverb.rpc.wire.FrameCodec;
import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The outbound half of a {@link WireConnection}, both sides': frames written at once into a claimed transport buffer,
 * or queued in order while the transport is back-pressured; the cork that holds a read batch's frames until the batch
 * ends; the queue's failures reported to their streams. {@link WireConnection} adds the inbound half (parsing frames,
 * dispatching them to streams, PING, protocol errors): one object, one lock ({@link #writeLock}), in two files.
 */
abstract class WireWriter implements ConnectionHandler
{
    static final Logger LOG = LoggerFactory.getLogger(WireConnection.class);
    /**
     * The connection's lines a peer or an application can cause once per connection or per call (a protocol error, a
     * call's end that threw): a burst, then a line per interval with the count left out (a peer reconnecting to
     * send garbage, or a callback failing on every call, cannot flood the log).
     */
    static final LogLimiter PEER_LOG = new LogLimiter((line, t) -> LOG.warn(line, t));
    private static final int ENCODE_FAILED = -100;
    /**
     * The largest transport message {@link #writeAll} fills with several frames: within the RDMA engine's default
     * eager limit (4 KiB, one SEND), so that coalescing never turns small frames into a rendezvous.
     */
    static final int COALESCE_LIMIT = 4096;
    /**
     * Replies the peer provoked (PING ACKs, the STATUS of a call refused or not found) that may wait behind
     * back-pressure: a peer that keeps sending and stops reading would otherwise grow the queue until the heap is gone
     * (the ping and reset floods of HTTP/2; Netty's {@code maxQueuedControlFrames} is the same bound). One more closes
     * the connection ({@link WireConnection#writeReply}).
     */
    static final int MAX_QUEUED_REPLIES = 10_000;

    /** A reply the peer provoked: counted while it waits in the queue (see {@link #MAX_QUEUED_REPLIES}). */
    static final class Reply implements OutboundFrame
    {
        final OutboundFrame frame;

        Reply(final OutboundFrame frame)
        {
            this.frame = frame;
        }

        @Override
        public int length()
        {
            return frame.length();
        }

        @Override
        public void encode(final FrameEncoder encoder, final ByteBuffer buffer, final int offset)
        {
            frame.encode(encoder, buffer, offset);
        }

        @Override
        public void failed(final Status status)
        {
            frame.failed(status);
        }
    }

    final StreamMap streams = new StreamMap();
    volatile Connection connection;
    volatile boolean closed;

    /** Guards writing frames, and on a client the stream-id assignment and its not-yet-sent streams. */
    final Object writeLock = new Object();
    private final WriteClaim claim = new WriteClaim();
    private final FrameEncoder encoder = new FrameEncoder();
    private final ArrayDeque<OutboundFrame> pending = new ArrayDeque<>();
    /** Frames in {@link #pending} (written under writeLock, read by any thread). */
    private volatile int queuedFrames;
    /** {@link Reply} frames in {@link #pending}; guarded by writeLock. */
    private int queuedReplies;
    /** Run once the queue is short again ({@link #whenDrained}); guarded by writeLock, null when none wait. */
    private List<Runnable> drainWaiters;
    /** Guarded by writeLock: close the transport connection once {@link #pending} has been written out. */
    private boolean closeWhenFlushed;
    private Throwable encodeFailure;
    /**
     * The cork (guarded by writeLock): while the transport's thread delivers a read batch of several transport
     * messages (or, on a server, starts several calls at its end), the frames it writes wait here and leave together,
     * in few transport messages, when the batch ends (as a read loop flushes once). Any other thread's write, and any
     * close, writes them first, so that frames keep the order in which they were written. Null while not corked.
     */
    private Thread corkOwner;
    private OutboundFrame[] corked;
    private int corkedCount;
    private int corkedBytes;
    /** Transport messages delivered in the current read batch; the transport's thread only. */
    private int batchMessages;
    /** Streams the current read batch ended (a client's STATUS frames); the transport's thread only. */
    private int batchEnds;
    /** Whether the transport says when a read batch ends (then the cork may be used); set when attached. */
    private boolean batches;

    /**
     * @return true on the server's side of the connection (inbound messages are requests).
     */
    abstract boolean serverSide();

    String peer()
    {
        final Connection c = connection;
        return c == null ? "unconnected" : c.remoteAddress();
    }

    // ---------------------------------------------------------------- outbound

    /**
     * Writes a frame now if the transport has room and nothing is queued ahead of it, else queues it.
     *
     * @param frame the frame.
     * @return false if the connection is closed (the frame is dropped).
     */
    final boolean write(final OutboundFrame frame)
    {
        final int result;
        final Throwable failure;
        List<Object[]> uncorked = null;
        synchronized (writeLock)
        {
            if (closed || connection == null)
            {
                return false;
            }
            if (corkOwner != null)
            {
                if (corkOwner == Thread.currentThread())
                {
                    uncorked = corkLocked(frame);
                    result = ClaimResult.OK;
                    failure = null;
                }
                else
                {
                    uncorked = flushCorkedLocked();
                    result = offerLocked(frame);
                    failure = takeEncodeFailure(result);
                }
            }
            else
            {
                result = offerLocked(frame);
                failure = takeEncodeFailure(result);
            }
        }
        reportFailures(uncorked);
        return result == ClaimResult.OK || reportFailure(frame, result, failure);
    }

    // ---------------------------------------------------------------- the cork

    /**
     * Starts corking this thread's frames (the transport's thread, delivering a read batch; a stream's callback that
     * writes several responses): see {@link #corkOwner}.
     *
     * @return true if this call started it (then this thread {@link #uncork}s it); false if corked already.
     */
    final boolean cork()
    {
        synchronized (writeLock)
        {
            if (corkOwner == null && !closed)
            {
                corkOwner = Thread.currentThread();
                return true;
            }
            return false;
        }
    }

    /** Writes the corked frames and stops corking, if this thread corked. */
    final void uncork()
    {
        final List<Object[]> failures;
        synchronized (writeLock)
        {
            if (corkOwner != Thread.currentThread())
            {
                return;
            }
            corkOwner = null;
            failures = flushCorkedLocked();
        }
        reportFailures(failures);
    }

    // guarded by writeLock: appends the owner's frame; a transport message's worth leaves at once
    private List<Object[]> corkLocked(final OutboundFrame frame)
    {
        if (corked == null)
        {
            corked = new OutboundFrame[32];
        }
        else if (corkedCount == corked.length)
        {
            corked = Arrays.copyOf(corked, corkedCount * 2);
        }
        corked[corkedCount++] = frame;
        corkedBytes += frame.length();
        return corkedBytes >= COALESCE_LIMIT ? flushCorkedLocked() : null;
    }

    // guarded by writeLock: writes what is corked (several calls' frames), in order; @return failures to report
    private List<Object[]> flushCorkedLocked()
    {
        final int count = corkedCount;
        if (count == 0)
        {
            return null;
        }
        corkedCount = 0;
        corkedBytes = 0;
        try
        {
            return writeAllLocked(corked, count, false, null);
        }
        finally
        {
            Arrays.fill(corked, 0, count, null);
        }
    }

    /**
     * The transport's thread is about to deliver a transport message: from the second of a read batch on, what it
     * writes is corked until the batch ends ({@link #onReadComplete}); a lone message (a ping-pong) is never corked.
     */
    final void beforeMessage()
    {
        if (batches && ++batchMessages == 2)
        {
            cork();
        }
    }

    /**
     * The transport's thread is about to end a stream (a client's STATUS): from the read batch's second on, what it
     * writes is corked until the batch ends, so that the calls a client starts as others end (a load generator, a
     * pipeline) leave together, while a lone response's successor leaves at once.
     */
    final void streamEnded()
    {
        if (batches && ++batchEnds == 2)
        {
            cork();
        }
    }

    /** The end of a read batch: what was corked leaves. Subclasses that override it call it last. */
    @Override
    public void onReadComplete(final Connection readConnection)
    {
        batchMessages = 0;
        batchEnds = 0;
        uncork();
    }

    /**
     * @param signalled whether the transport calls {@link #onReadComplete} at the end of each read batch (its
     *                  {@code signalsReadComplete()}): only then does the transport's thread cork its frames.
     */
    final void readBatchesSignalled(final boolean signalled)
    {
        this.batches = signalled;
    }

    /** Tests: whether frames are corked now. */
    final boolean corked()
    {
        synchronized (writeLock)
        {
            return corkOwner != null;
        }
    }

    /**
     * Writes frames in order, as {@link #write} each would, but small consecutive frames go together in one transport
     * message of at most {@link #COALESCE_LIMIT} bytes: one write lock, one claim and one commit for many frames (a
     * streaming call's responses produced in one go). A frame that fails to encode sends the frames of its message
     * one at a time instead, so that only it fails. The references in {@code frames} are left as they are.
     *
     * @param frames the frames, from index 0.
     * @param count  how many.
     */
    final void writeAll(final OutboundFrame[] frames, final int count)
    {
        writeAll(frames, count, true);
    }

    /**
     * {@link #writeAll(OutboundFrame[], int)}, for frames of one call or of several.
     *
     * @param frames  the frames, from index 0.
     * @param count   how many.
     * @param oneCall whether they are one call's: else a transport message that fails (or that the peer refuses)
     *                fails each of its frames' calls, not only the first's.
     */
    final void writeAll(final OutboundFrame[] frames, final int count, final boolean oneCall)
    {
        List<Object[]> failures;
        synchronized (writeLock)
        {
            if (closed || connection == null)
            {
                return; // dropped, as write() drops them
            }
            failures = flushCorkedLocked(); // corked frames were written first (this writes them, whoever corked)
            failures = writeAllLocked(frames, count, oneCall, failures);
        }
        reportFailures(failures);
    }

    // guarded by writeLock: writeAll's work; @return failures (added to those given) to report outside the lock
    private List<Object[]> writeAllLocked(final OutboundFrame[] frames, final int count, final boolean oneCall,
        final List<Object[]> earlier)
    {
        List<Object[]> failures = earlier;
        {
            final int limit = Math.min(COALESCE_LIMIT, connection.maxMessageLength());
            int i = 0;
            while (i < count)
            {
                int total = frames[i].length();
                int j = i + 1;
                if (pending.isEmpty())
                {
                    while (j < count && total + frames[j].length() <= limit)
                    {
                        total += frames[j].length();
                        j++;
                    }
                }
                int result = j - i > 1 ? writeCoalesced(frames, i, j, total, oneCall) : ClaimResult.OK;
                if (j - i == 1 || result == ENCODE_FAILED)
                {
                    // one frame, or a frame of the group failed to encode (nothing was sent): one by one
                    for (int k = i; k < j; k++)
                    {
                        result = offerLocked(frames[k]);
                        if (result != ClaimResult.OK)
                        {
                            failures = noteFailure(failures, frames[k], result);
                        }
                    }
                }
                else if (result == ClaimResult.BACK_PRESSURED)
                {
                    for (int k = i; k < j; k++)
                    {
                        enqueueLocked(frames[k]);
                    }
                }
                else if (result != ClaimResult.OK)
                {
                    for (int k = i; k < (oneCall ? i + 1 : j); k++)
                    {
                        failures = noteFailure(failures, frames[k], result);
                    }
                }
                i = j;
            }
        }
        return failures;
    }

    // guarded by writeLock
    private List<Object[]> noteFailure(final List<Object[]> failures, final OutboundFrame frame, final int result)
    {
        final List<Object[]> list = failures != null ? failures : new ArrayList<>();
        list.add(new Object[]{frame, result, takeEncodeFailure(result)});
        return list;
    }

    private void reportFailures(final List<Object[]> failures)
    {
        if (failures != null)
        {
            for (final Object[] f : failures)
            {
                reportFailure((OutboundFrame)f[0], (Integer)f[1], (Throwable)f[2]);
            }
        }
    }

    // guarded by writeLock: frames[from..to) in one claim of total bytes; ENCODE_FAILED aborts it (nothing sent)
    private int writeCoalesced(final OutboundFrame[] frames, final int from, final int to, final int total,
        final boolean oneCall)
    {
        final int result = connection.tryClaim(total, claim);
        if (result != ClaimResult.OK)
        {
            return result;
        }
        final ByteBuffer buffer = FrameCodec.le(claim.buffer());
        final int end = claim.offset() + total;
        int at = claim.offset();
        try
        {
            for (int k = from; k < to; k++)
            {
                buffer.limit(end); // an encoder narrows the limit to its payload
                frames[k].encode(encoder, buffer, at);
                at += frames[k].length();
            }
        }
        catch (final Throwable t)
        {
            claim.abort();
            return ENCODE_FAILED;
        }
        // a refusal fails the frames' call, or each frame's call when they are several calls'
        claim.attachment(oneCall ? frames[from] : new OutboundFrame.Group(Arrays.copyOfRange(frames, from, to)));
        final int committed = claim.commit();
        claim.attachment(null);
        return committed;
    }

    /**
     * Opens a stream and writes its first frame in one step under the write lock (one lock, not one per step), so
     * that first frames leave in the order in which the starter hands out stream ids.
     *
     * @param stream the new stream; {@link #assignStreamId} registers it under the write lock.
     * @param frame  the stream's first frame (its stream id is set by {@link #assignStreamId}).
     * @return the stream id, or -1 if refused or closed (nothing written).
     */
    final int startStream(final RpcStream stream, final OutboundFrame frame)
    {
        final int id;
        final int result;
        final Throwable failure;
        final List<Object[]> uncorked;
        synchronized (writeLock)
        {
            if (closed || connection == null)
            {
                return -1;
            }
            id = assignStreamId(stream);
            if (id < 0)
            {
                return -1;
            }
            if (corkOwner == Thread.currentThread())
            {
                uncorked = corkLocked(frame); // ids stay in order: the corked frames leave before anyone else's
                result = ClaimResult.OK;
                failure = null;
            }
            else
            {
                uncorked = corkOwner != null ? flushCorkedLocked() : null;
                result = offerLocked(frame);
                failure = takeEncodeFailure(result);
            }
        }
        reportFailures(uncorked);
        if (result != ClaimResult.OK)
        {
            reportFailure(frame, result, failure); // outside the lock: it runs the call's failure path
        }
        return id;
    }

    /**
     * Runs under the write lock for {@link #startStream}: assigns the stream its id and registers it.
     *
     * @param stream the new stream.
     * @return its id, or -1 to refuse it.
     */
    int assignStreamId(final RpcStream stream)
    {
        return -1;
    }

    // guarded by writeLock; OK when written or queued behind earlier frames / back-pressure
    private int offerLocked(final OutboundFrame frame)
    {
        if (!pending.isEmpty())
        {
            enqueueLocked(frame);
            return ClaimResult.OK;
        }
        final int result = writeNow(frame);
        if (result == ClaimResult.BACK_PRESSURED)
        {
            enqueueLocked(frame);
            return ClaimResult.OK;
        }
        return result;
    }

    // guarded by writeLock
    private void enqueueLocked(final OutboundFrame frame)
    {
        pending.addLast(frame);
        queuedFrames = pending.size();
        if (frame instanceof Reply)
        {
            queuedReplies++;
        }
    }

    // guarded by writeLock: the frame just taken out of pending
    private void dequeuedLocked(final OutboundFrame frame)
    {
        queuedFrames = pending.size();
        if (frame instanceof Reply)
        {
            queuedReplies--;
        }
    }

    /**
     * Runs the task on the thread that drains the queue once fewer than a quarter of
     * {@link ReactorServerCall#QUEUED_HIGH} frames wait behind back-pressure, unless the queue is that short already.
     * Never runs it on the calling thread (its caller may hold a call's monitor). Dropped if the connection closes
     * first.
     *
     * @param task what to run.
     * @return true if the task will run when the queue drains; false if the queue is short now (the caller goes on).
     */
    final boolean whenDrained(final Runnable task)
    {
        synchronized (writeLock)
        {
            if (pending.size() < ReactorServerCall.QUEUED_HIGH / 4 || closed)
            {
                return false;
            }
            if (drainWaiters == null)
            {
                drainWaiters = new ArrayList<>();
            }
            drainWaiters.add(task);
            return true;
        }
    }

    /** @return frames waiting behind back-pressure (any thread; a snapshot). */
    final int queuedFrames()
    {
        return queuedFrames;
    }

    /** @return true if another reply the peer provoked may wait behind back-pressure (see {@link #MAX_QUEUED_REPLIES}). */
    final boolean mayQueueReply()
    {
        synchronized (writeLock)
        {
            return queuedReplies < MAX_QUEUED_REPLIES;
        }
    }

    // guarded by writeLock
    private Throwable takeEncodeFailure(final int result)
    {
        if (result != ENCODE_FAILED)
        {
            return null;
        }
        final Throwable failure = encodeFailure;
        encodeFailure = null;
        return failure;
    }

    private boolean reportFailure(final OutboundFrame frame, final int result, final Throwable failure)
    {
        if (result == ClaimResult.TOO_LARGE)
        {
            frame.failed(Status.RESOURCE_EXHAUSTED.withDescription("message of " + frame.length() +
                " bytes exceeds the transport's limit of " + connection.maxMessageLength() + " bytes"));
            return true;
        }
        if (result == ENCODE_FAILED)
        {
            frame.failed(Status.fromThrowable(failure).code() == StatusCode.UNKNOWN ?
                Status.INTERNAL.withDescription("failed to serialize message: " + failure).withCause(failure) :
                Status.fromThrowable(failure));
            return true;
        }
        return false;
    }

    private int writeNow(final OutboundFrame frame)
    {
        final int length = frame.length();
        final int result = connection.tryClaim(length, claim);
        if (result != ClaimResult.OK)
        {
            return result;
        }
        try
        {
            frame.encode(encoder, FrameCodec.le(claim.buffer()), claim.offset());
        }
        catch (final Throwable t)
        {
            claim.abort();
            encodeFailure = t;
            return ENCODE_FAILED;
        }
        claim.attachment(frame); // handed back by onMessageRefused
        final int committed = claim.commit();
        claim.attachment(null);
        return committed;
    }

    @Override
    public void onMessageRefused(final Connection connection, final Object attachment, final String reason)
    {
        if (attachment instanceof OutboundFrame)
        {
            ((OutboundFrame)attachment).failed(Status.RESOURCE_EXHAUSTED.withDescription(reason));
        }
    }

    /**
     * Closes the transport connection once every frame written so far has left: at once when nothing waits behind
     * back-pressure, else when the last queued frame is written. A drained connection closes this way on both sides,
     * so that the last frames (a server's last STATUS and its GOAWAY, a client's CANCEL) are not dropped with the
     * queue when credits were short.
     */
    final void closeWhenFlushed()
    {
        List<Object[]> uncorked = null;
        synchronized (writeLock)
        {
            if (corkedCount > 0 && !closed && connection != null)
            {
                uncorked = flushCorkedLocked(); // written before the close, as every frame written so far
            }
        }
        reportFailures(uncorked);
        synchronized (writeLock)
        {
            if (!pending.isEmpty())
            {
                closeWhenFlushed = true;
                return;
            }
        }
        final Connection c = connection;
        if (c != null)
        {
            c.close();
        }
    }

    @Override
    public void onWritable(final Connection connection)
    {
        List<Object[]> failures = null;
        boolean closeNow = false;
        List<Runnable> resume = null;
        synchronized (writeLock)
        {
            OutboundFrame frame;
            while ((frame = pending.peekFirst()) != null)
            {
                final int result = writeNow(frame);
                if (result == ClaimResult.BACK_PRESSURED)
                {
                    break;
                }
                pending.pollFirst();
                dequeuedLocked(frame);
                if (result != ClaimResult.OK)
                {
                    if (failures == null)
                    {
                        failures = new ArrayList<>();
                    }
                    failures.add(new Object[]{frame, result, encodeFailure});
                    encodeFailure = null;
                }
            }
            if (closeWhenFlushed && pending.isEmpty())
            {
                closeWhenFlushed = false;
                closeNow = true;
            }
            if (drainWaiters != null && pending.size() < ReactorServerCall.QUEUED_HIGH / 4)
            {
                resume = drainWaiters;
                drainWaiters = null;
            }
        }
        if (resume != null && !closeNow)
        {
            for (final Runnable task : resume)
            {
                task.run();
            }
        }
        if (closeNow)
        {
            connection.close();
        }
        if (failures != null)
        {
            for (final Object[] f : failures)
            {
                reportFailure((OutboundFrame)f[0], (Integer)f[1], (Throwable)f[2]);
            }
        }
    }

    /**
     * Takes back a frame still queued behind back-pressure, not yet handed to the transport: it never leaves.
     *
     * @param frame the frame.
     * @return true if it was queued (and is dropped now); false if it is on its way or was never queued.
     */
    final boolean unqueue(final OutboundFrame frame)
    {
        synchronized (writeLock)
        {
            for (int i = 0; i < corkedCount; i++)
            {
                if (corked[i] == frame)
                {
                    corkedBytes -= frame.length();
                    System.arraycopy(corked, i + 1, corked, i, corkedCount - i - 1);
                    corked[--corkedCount] = null;
                    return true;
                }
            }
            final boolean removed = pending.removeFirstOccurrence(frame);
            if (removed)
            {
                dequeuedLocked(frame);
            }
            return removed;
        }
    }

    final void dropPending()
    {
        synchronized (writeLock)
        {
            pending.clear();
            queuedFrames = 0;
            queuedReplies = 0;
            drainWaiters = null;
            if (corkedCount > 0)
            {
                Arrays.fill(corked, 0, corkedCount, null);
                corkedCount = 0;
                corkedBytes = 0;
            }
        }
    }
}
