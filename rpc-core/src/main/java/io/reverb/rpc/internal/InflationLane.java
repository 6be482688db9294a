package io.reverb.rpc.internal;

import io.reverb.common.LogLimiter;
import io.reverb.rpc.Status;
import io.reverb.rpc.compression.Codec;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.concurrent.Executor;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Inflates one server connection's COMPRESSED requests away from the transport's thread, which every connection of the
 * transport shares: a peer's zip bombs then cost its own lane's time, never the other connections' latency.
 *
 * <p>The transport's thread copies the compressed bytes (charged to the connection's {@link InflationBudget}) and
 * queues them here; a frame of the same call that must follow them (an uncompressed MESSAGE, HALF_CLOSE) is queued
 * behind them, so a call sees its frames in the order they came. The lane runs on a small shared pool, one entry per
 * task and then to the back of the pool's queue: a flooding connection holds at most one inflater thread at a time,
 * and takes turns with the others; past an allowance its inflation is paced ({@link InflationBudget#inflated}). A
 * call's handler that runs on the transport's thread (no executor set) runs on the inflater thread for a compressed
 * request.
 *
 * <p>Thread model: {@link #compressed}, {@link #plain} and {@link #halfClose} on the transport's thread; the entries
 * run one at a time, in order, on the pool. Guarded by this: the queue and whether a task is scheduled; a call's count
 * of entries waiting ({@link ServerCall#inflationPending}) is written under this and read by the transport's thread.
 */
final class InflationLane implements Runnable
{
    private static final LogLimiter FAILURE_LOG = new LogLimiter((line, t) -> WireConnection.LOG.warn(line, t));
    /** What an entry costs besides its bytes (the entry, the array's header): a flood of empty frames is bounded too. */
    static final int ENTRY_OVERHEAD = 64;
    /**
     * Deflate's largest ratio (about 1032:1): a compressed request waiting in the lane holds what it may inflate to,
     * up to the limit, so that the requests a connection queues are bounded by what they will cost, not by their few
     * bytes on the wire (a flood of 4 KiB bombs queues 16 per 64 MiB, the others are refused at once).
     */
    static final int MAX_RATIO = 1032;
    private static final int COMPRESSED = 0;
    private static final int PLAIN = 1;
    private static final int HALF_CLOSE = 2;
    private static volatile Executor shared;

    private final ServerWireConnection connection;
    private final InflationBudget budget;
    private final int maxMessageSize;
    private final Executor executor;
    private final ArrayDeque<Entry> queue = new ArrayDeque<>();
    private boolean scheduled;

    /**
     * @param connection     the connection whose requests these are.
     * @param budget         its budget for inflated bytes.
     * @param maxMessageSize the largest request accepted, decompressed.
     * @param executor       runs the lane, or null for the shared inflater pool.
     */
    InflationLane(final ServerWireConnection connection, final InflationBudget budget, final int maxMessageSize,
        final Executor executor)
    {
        this.connection = connection;
        this.budget = budget;
        this.maxMessageSize = maxMessageSize;
        this.executor = executor;
    }

    /**
     * The process's inflater threads, started on first use: half the processors (at least one), daemons.
     *
     * @return the pool.
     */
    static Executor sharedExecutor()
    {
        Executor executor = shared;
        if (executor == null)
        {
            synchronized (InflationLane.class)
            {
                executor = shared;
                if (executor == null)
                {
                    final int threads = Math.max(1, Runtime.getRuntime().availableProcessors() / 2);
                    final AtomicInteger count = new AtomicInteger();
                    final ThreadFactory factory = r ->
                    {
                        final Thread t = new Thread(r, "reverb-inflate-" + count.incrementAndGet());
                        t.setDaemon(true);
                        return t;
                    };
                    // the queue holds at most one task per connection with work (a lane schedules itself once)
                    executor = new ThreadPoolExecutor(threads, threads, 0, TimeUnit.MILLISECONDS,
                        new LinkedBlockingQueue<>(), factory);
                    shared = executor;
                }
            }
        }
        return executor;
    }

    /**
     * Queues a compressed request, on the transport's thread; the bytes are copied.
     *
     * @return false if the connection's budget has no room for the copy (the caller fails the call).
     */
    boolean compressed(final ServerCall<?, ?> call, final Codec codec, final String codecName, final boolean endOfStream,
        final ByteBuffer buffer, final int start, final int end)
    {
        return enqueue(call, COMPRESSED, codec, codecName, endOfStream, buffer, start, end);
    }

    /**
     * Queues an uncompressed request of a call that has compressed ones waiting, on the transport's thread.
     *
     * @return false if the connection's budget has no room for the copy.
     */
    boolean plain(final ServerCall<?, ?> call, final boolean endOfStream, final ByteBuffer buffer, final int start,
        final int end)
    {
        return enqueue(call, PLAIN, null, null, endOfStream, buffer, start, end);
    }

    /**
     * Queues a call's HALF_CLOSE behind its requests, on the transport's thread.
     *
     * @return false if the connection's budget has no room for the entry (a peer repeating HALF_CLOSE is bounded too).
     */
    boolean halfClose(final ServerCall<?, ?> call)
    {
        return enqueue(call, HALF_CLOSE, null, null, false, null, 0, 0);
    }

    private boolean enqueue(final ServerCall<?, ?> call, final int kind, final Codec codec, final String codecName,
        final boolean endOfStream, final ByteBuffer buffer, final int start, final int end)
    {
        final int length = end - start;
        final long charge = length + ENTRY_OVERHEAD;
        final long prepaid = kind == COMPRESSED ? Math.min(maxMessageSize + 1L, (long)length * MAX_RATIO + 1024) : 0;
        if (!budget.tryReserve(charge + prepaid))
        {
            return false;
        }
        byte[] bytes = null;
        if (length > 0)
        {
            bytes = new byte[length];
            buffer.get(start, bytes, 0, length);
        }
        final Entry entry = new Entry(call, kind, codec, codecName, bytes, endOfStream, charge, prepaid);
        final boolean schedule;
        synchronized (this)
        {
            queue.addLast(entry);
            call.inflationPending++;
            schedule = !scheduled;
            scheduled = true;
        }
        if (schedule)
        {
            schedule();
        }
        return true;
    }

    private void schedule()
    {
        try
        {
            (executor != null ? executor : sharedExecutor()).execute(this);
        }
        catch (final RuntimeException rejected)
        {
            // the executor is shut down (the server is closing): end the waiting calls rather than strand them
            Entry entry;
            while ((entry = next()) != null)
            {
                done(entry);
                entry.call.cancelCall(Status.UNAVAILABLE.withDescription("request inflater rejected the message"), null);
            }
        }
    }

    private Entry next()
    {
        synchronized (this)
        {
            final Entry entry = queue.pollFirst();
            if (entry == null)
            {
                scheduled = false;
            }
            return entry;
        }
    }

    private void done(final Entry entry)
    {
        budget.release(entry.charge + entry.prepaid); // the prepaid part unless inflation took it over
        synchronized (this)
        {
            entry.call.inflationPending--;
        }
    }

    /** One entry, then back to the pool's queue if more wait: a long lane takes turns with the other connections. */
    @Override
    public void run()
    {
        final Entry entry = next();
        if (entry == null)
        {
            return;
        }
        try
        {
            process(entry);
        }
        catch (final Throwable t)
        {
            FAILURE_LOG.log("inflate", "delivering a request from " + connection.peer() + " failed", t);
            entry.call.cancelCall(Status.INTERNAL.withDescription("failed to deliver the request: " + t), null);
        }
        finally
        {
            done(entry);
        }
        final boolean more;
        synchronized (this)
        {
            more = !queue.isEmpty();
            if (!more)
            {
                scheduled = false;
            }
        }
        if (more)
        {
            schedule();
        }
    }

    private void process(final Entry entry)
    {
        final ServerCall<?, ?> call = entry.call;
        if (call.isClosed())
        {
            return; // cancelled, expired or failed meanwhile: its requests are not wanted, not even inflated
        }
        switch (entry.kind)
        {
            case HALF_CLOSE:
                call.onHalfClose();
                return;
            case PLAIN:
                call.onMessage(ByteBuffer.wrap(entry.bytes), entry.endOfStream);
                return;
            default:
                inflate(call, entry);
        }
    }

    private void inflate(final ServerCall<?, ?> call, final Entry entry)
    {
        final byte[][] out = new byte[1][];
        final int length;
        final int compressedLength = entry.bytes == null ? 0 : entry.bytes.length;
        try
        {
            final long prepaid = entry.prepaid;
            entry.prepaid = 0; // taken over: held for the array, or given back, by the inflation
            length = InboundDecompression.decompress(entry.codec,
                entry.bytes == null ? ByteBuffer.allocate(0) : ByteBuffer.wrap(entry.bytes), 0, compressedLength,
                maxMessageSize, budget, prepaid, out);
        }
        catch (final IOException | RuntimeException e)
        {
            call.onUndecodableMessage(WireConnection.undecodable(true, entry.codecName, compressedLength, e));
            return;
        }
        if (length == InboundDecompression.TOO_LARGE)
        {
            call.onUndecodableMessage(WireConnection.tooLarge(true, entry.codecName, compressedLength, maxMessageSize));
            return;
        }
        if (length == InboundDecompression.OVER_BUDGET)
        {
            call.onUndecodableMessage(overBudget(budget.limit()));
            return;
        }
        call.onInflatedMessage(out[0], length, entry.endOfStream, budget);
    }

    /**
     * @param limit the connection's budget.
     * @return the status of a call whose compressed request found the budget full.
     */
    static Status overBudget(final long limit)
    {
        return Status.RESOURCE_EXHAUSTED.withDescription("compressed requests in flight on this connection exceed " +
            limit + " bytes, inflated (RpcServer.Builder.maxInflatedBytesPerConnection)");
    }

    /** A frame waiting in the lane. */
    private static final class Entry
    {
        final ServerCall<?, ?> call;
        final int kind;
        final Codec codec;
        final String codecName;
        final byte[] bytes;
        final boolean endOfStream;
        final long charge;
        // what it may inflate to, reserved while it waits (the lane's thread only once queued)
        long prepaid;

        Entry(final ServerCall<?, ?> call, final int kind, final Codec codec, final String codecName, final byte[] bytes,
            final boolean endOfStream, final long charge, final long prepaid)
        {
            this.prepaid = prepaid;
            this.call = call;
            this.kind = kind;
            this.codec = codec;
            this.codecName = codecName;
            this.bytes = bytes;
            this.endOfStream = endOfStream;
            this.charge = charge;
        }
    }
}
