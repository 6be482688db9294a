package io.reverb.rdma.provider.tcp;

import io.reverb.rdma.provider.base.ParkingCompletionChannel;
import java.io.IOException;
import java.nio.channels.ClosedSelectorException;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.util.function.Consumer;

/**
 * A completion channel whose waiter blocks in a selector of its own. Events come from two places: an armed CQ that
 * receives a completion (from the NIC thread, or a thread posting to a QP in ERROR) counts one event and wakes the
 * selector; and the sockets that the channel's poller reads itself ({@link TcpCompletionQueue}) are registered with
 * that selector, so that a message arriving while the poller sleeps wakes the poller directly, with no NIC thread in
 * between: one wake-up per message, as with a NIC's completion channel.
 *
 * <p>A socket's registration fires once: the waiter turns its interest off, and the next read of that socket by the
 * poller turns it on again ({@link TcpQueuePair#channelKeyFired()}), so a socket its poller does not read (a paused
 * receiver) cannot keep the waiter from sleeping.
 */
final class TcpCompletionChannel extends ParkingCompletionChannel implements TcpReadOwner.Channel
{
    private final TcpVerbsContext context;
    private final Selector selector;
    private final Consumer<SelectionKey> onReady = TcpCompletionChannel::onReady;
    private volatile boolean waiting;

    TcpCompletionChannel(final TcpVerbsContext context) throws IOException
    {
        this.context = context;
        this.selector = Selector.open();
    }

    /** @return the selector the poller's sockets are registered with while it reads them */
    @Override
    public Selector selector()
    {
        return selector;
    }

    /** @return true while a poller is blocked (or about to block) in {@link #await(long)} */
    @Override
    public boolean waiting()
    {
        return waiting;
    }

    @Override
    protected void beginWait()
    {
        // Dekker with signal() and wakeup(): waiting is published before the flags are read, and they are set
        // before waiting is read, so either the loop sees the flag or the selector is woken.
        waiting = true;
    }

    @Override
    protected int block(final long remainingNanos) throws IOException
    {
        final long millis = selectTimeoutMillis(remainingNanos);
        try
        {
            // > 0: bytes arrived on a socket this poller reads; it reads them when it polls.
            return selector.select(onReady, millis);
        }
        catch (final ClosedSelectorException ex)
        {
            throw new IOException("completion channel is closed", ex);
        }
    }

    @Override
    protected void endWait()
    {
        waiting = false;
    }

    @Override
    public void wakeWaiter()
    {
        if (waiting)
        {
            selector.wakeup();
        }
    }

    private static void onReady(final SelectionKey key)
    {
        ((TcpQueuePair)key.attachment()).channelKeyFired();
    }

    @Override
    protected void onClose()
    {
        try
        {
            // Wakes a waiter, which then sees closed.
            selector.close();
        }
        catch (final IOException ignore)
        {
            // Closing anyway.
        }
        context.removed(this);
    }

    @Override
    public String toString()
    {
        return "TcpCompletionChannel{pending=" + pendingEvents() + ", waiting=" + waiting + '}';
    }
}
