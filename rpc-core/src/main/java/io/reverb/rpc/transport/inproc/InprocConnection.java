package io.reverb.rpc.transport.inproc;

import io.reverb.common.ClaimResult;
import io.reverb.common.LogLimiter;
import io.reverb.rpc.transport.Connection;
import io.reverb.rpc.transport.ConnectionHandler;
import io.reverb.rpc.transport.ResourceUsage;
import io.reverb.common.WriteClaim;
import java.nio.ByteBuffer;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One end of an inproc connection. Outbound bytes (claimed, or committed but not yet delivered by the peer) are
 * counted against a capacity: past it, {@link #tryClaim} answers BACK_PRESSURED until the peer's delivery thread
 * releases space and calls {@code onWritable}.
 */
final class InprocConnection implements Connection, WriteClaim.Committer
{
    private static final Logger LOG = LoggerFactory.getLogger(InprocConnection.class);
    /** A handler failing on every message logs a burst, then a line per interval with the count left out. */
    static final LogLimiter FAILURES = new LogLimiter((line, t) -> LOG.warn(line, t));

    /** Marks the end of a direction in the inbound queue. */
    private static final class CloseMarker
    {
        final Throwable cause;

        CloseMarker(final Throwable cause)
        {
            this.cause = cause;
        }
    }

    private final String localAddress;
    private final String remoteAddress;
    private final int capacity;
    private final ConcurrentLinkedQueue<Object> inbound = new ConcurrentLinkedQueue<>();
    private final AtomicInteger wip = new AtomicInteger();
    private final Runnable drainTask = () -> InprocDelivery.drain(this);
    private final AtomicLong outboundBytes = new AtomicLong();
    private final AtomicLong buffers = new AtomicLong();
    private final AtomicLong bytes = new AtomicLong();
    private final AtomicBoolean closeSignalled = new AtomicBoolean();
    private final AtomicBoolean closing = new AtomicBoolean();
    private volatile boolean needsWritable;
    private volatile boolean closed;
    private volatile boolean frozen;
    private volatile ConnectionHandler handler;
    private InprocConnection peer;

    private final ResourceUsage usage = new ResourceUsage()
    {
        @Override
        public long buffersInUse()
        {
            return buffers.get();
        }

        @Override
        public long bytesInUse()
        {
            return bytes.get();
        }
    };

    InprocConnection(final String localAddress, final String remoteAddress, final int capacity, final ConnectionHandler handler)
    {
        this.localAddress = localAddress;
        this.remoteAddress = remoteAddress;
        this.capacity = capacity;
        this.handler = handler;
    }

    void peer(final InprocConnection peer)
    {
        this.peer = peer;
    }

    /**
     * The server's end gets its handler once the acceptor returned it: nothing is delivered to this end before (what
     * the peer wrote, or a close, waits), so the handler sees every event of the connection, in order.
     */
    void handler(final ConnectionHandler handler)
    {
        this.handler = handler;
        scheduleDrain();
    }

    boolean isServerEndOf(final String name)
    {
        return localAddress.equals("inproc://" + name);
    }

    /** @return the other end (null before the pair is joined). */
    InprocConnection peer()
    {
        return peer;
    }

    void frozen(final boolean frozen)
    {
        this.frozen = frozen;
        if (!frozen)
        {
            scheduleDrain();
        }
    }

    @Override
    public int tryClaim(final int length, final WriteClaim claim)
    {
        if (length <= 0)
        {
            throw new IllegalArgumentException("length must be positive: " + length);
        }
        if (closed || closing.get())
        {
            return ClaimResult.CLOSED;
        }
        if (length > InprocTransportProvider.MAX_MESSAGE_LENGTH)
        {
            return ClaimResult.TOO_LARGE;
        }
        while (true)
        {
            final long current = outboundBytes.get();
            // a message larger than the capacity still goes through alone, or it could never be sent
            if (current > 0 && current + length > capacity)
            {
                needsWritable = true;
                // re-check after publishing the flag: a release in between would otherwise be missed
                if (outboundBytes.get() == current)
                {
                    return ClaimResult.BACK_PRESSURED;
                }
                continue;
            }
            if (outboundBytes.compareAndSet(current, current + length))
            {
                break;
            }
        }
        acquire(length);
        claim.wrap(ByteBuffer.allocate(length), 0, length, this, 0);
        return ClaimResult.OK;
    }

    @Override
    public int commit(final WriteClaim claim)
    {
        final ByteBuffer buffer = claim.buffer();
        buffer.clear().limit(claim.length());
        final InprocConnection peer = this.peer;
        if (closed || closing.get() || peer.closed)
        {
            releaseOutbound(claim.length());
            return ClaimResult.CLOSED;
        }
        peer.inbound.offer(buffer);
        peer.scheduleDrain();
        return ClaimResult.OK;
    }

    @Override
    public void abort(final WriteClaim claim)
    {
        releaseOutbound(claim.length());
    }

    private void acquire(final int length)
    {
        buffers.incrementAndGet();
        bytes.addAndGet(length);
        InprocTransportProvider.acquired(length);
    }

    private void releaseOutbound(final int length)
    {
        buffers.decrementAndGet();
        bytes.addAndGet(-length);
        InprocTransportProvider.released(length);
        outboundBytes.addAndGet(-length);
        if (needsWritable)
        {
            needsWritable = false;
            final ConnectionHandler h = handler;
            if (h != null && !closed)
            {
                try
                {
                    h.onWritable(this);
                }
                catch (final Throwable t)
                {
                    FAILURES.log("onWritable", "onWritable failed on " + this, t);
                }
            }
        }
    }

    private void scheduleDrain()
    {
        if (wip.getAndIncrement() == 0)
        {
            InprocDelivery.schedule(this);
        }
    }

    /** @return the pool's task that drains this connection ({@link InprocDelivery#drain}). */
    Runnable drainTask()
    {
        return drainTask;
    }

    /** Delivers what is queued, on a delivery thread, until nothing is (one drain at a time: {@code wip}). */
    void drain()
    {
        int missed = 1;
        while (true)
        {
            Object item;
            while (!frozen && handler != null && (item = inbound.poll()) != null)
            {
                if (item instanceof CloseMarker)
                {
                    signalClose(((CloseMarker)item).cause);
                }
                else
                {
                    deliver((ByteBuffer)item);
                    InprocDelivery.delivered(inbound.isEmpty());
                }
            }
            missed = wip.addAndGet(-missed);
            if (missed == 0)
            {
                return;
            }
        }
    }

    private void deliver(final ByteBuffer message)
    {
        final int length = message.limit();
        try
        {
            if (!closeSignalled.get())
            {
                handler.onMessage(this, message);
            }
        }
        catch (final Throwable t)
        {
            FAILURES.log("onMessage", "onMessage failed on " + this, t);
        }
        finally
        {
            // the sender's space comes back only once the message is consumed: this is the back-pressure
            peer.releaseOutbound(length);
        }
    }

    private void signalClose(final Throwable cause)
    {
        closed = true;
        if (closeSignalled.compareAndSet(false, true))
        {
            // drop what can no longer be delivered, so that the accounting returns to zero
            Object item;
            while ((item = inbound.poll()) != null)
            {
                if (item instanceof ByteBuffer)
                {
                    peer.releaseOutbound(((ByteBuffer)item).limit());
                }
            }
            InprocTransportProvider.CONNECTIONS.remove(this);
            try
            {
                handler.onClose(this, cause);
            }
            catch (final Throwable t)
            {
                FAILURES.log("onClose", "onClose failed on " + this, t);
            }
        }
    }

    @Override
    public void close()
    {
        if (closing.compareAndSet(false, true))
        {
            // the peer sees the close after every message already committed to it; so do we
            peer.closing.set(true);
            peer.inbound.offer(new CloseMarker(null));
            peer.scheduleDrain();
            inbound.offer(new CloseMarker(null));
            scheduleDrain();
        }
    }

    void kill(final Throwable cause)
    {
        if (closing.compareAndSet(false, true))
        {
            peer.closing.set(true);
            frozen = false;
            peer.frozen = false;
            // the dead side's undelivered input is lost; the survivor learns at once
            inbound.offer(new CloseMarker(cause));
            scheduleDrain();
            peer.inbound.offer(new CloseMarker(cause));
            peer.scheduleDrain();
        }
    }

    @Override
    public int maxMessageLength()
    {
        return InprocTransportProvider.MAX_MESSAGE_LENGTH;
    }

    @Override
    public boolean isOpen()
    {
        return !closed && !closing.get();
    }

    @Override
    public String fabric()
    {
        return "inproc";
    }

    @Override
    public String localAddress()
    {
        return localAddress;
    }

    @Override
    public String remoteAddress()
    {
        return remoteAddress;
    }

    @Override
    public ResourceUsage resourceUsage()
    {
        return usage;
    }

    @Override
    public String toString()
    {
        return "InprocConnection{" + localAddress + " -> " + remoteAddress + "}";
    }
}
