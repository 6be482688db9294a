package io.reverb.rdma.provider.shm;

import io.reverb.rdma.provider.base.ParkingCompletionChannel;
import java.io.IOException;
import java.nio.channels.CancelledKeyException;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.ClosedSelectorException;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.SocketChannel;
import java.util.ArrayList;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.function.Consumer;

/**
 * A completion channel. Events come from two places: producers in this JVM that disarm one of the channel's CQs
 * signal it directly; producers in other processes ring the doorbell over their connection's Unix domain socket.
 *
 * <p>With {@code reverb.shm.pollerDoorbells} (the default) the waiter blocks in a selector of its own in which the
 * doorbell sockets of the QPs whose receive CQ is bound here are registered: a doorbell wakes the waiter directly,
 * one thread wake-up per message that finds the poller asleep, as with a NIC's completion channel. The context's
 * event thread still reads every doorbell frame (and the socket's EOF) and signals the channel as before, so a
 * doorbell is never missed (a registration not in place yet, a socket whose one-shot interest is off). Whichever of
 * the two comes first raises the CQ's event for its current arming, the other does not
 * ({@link ShmCompletionQueue#doorbell()}): one event per doorbell. Without the option the waiter parks and only the
 * event thread wakes it (two wake-ups).
 *
 * <p>A socket's registration fires once per wait: the waiter turns its interest off when it fires (the bytes stay
 * for the event thread to read, so the socket stays readable for a while) and back on at its next wait. Sockets are
 * registered by the waiter itself at its next wait ({@link #watch}), so a poller that never sleeps (BUSY) registers
 * none. A socket closed while registered here keeps its descriptor until this selector selects again: the QP's
 * closing calls {@link #socketClosed()}, which lets the selector drop it at once.
 */
final class ShmCompletionChannel extends ParkingCompletionChannel
{
    private final ShmVerbsContext context;
    /** Null when the doorbells are left to the event thread: the waiter parks. */
    private final Selector selector;
    private final Consumer<SelectionKey> onReady = this::onReady;
    /** Doorbell sockets to register at the next wait (from the event thread, once a socket is non-blocking). */
    private final Queue<Watch> toWatch = new ConcurrentLinkedQueue<>();
    /** Keys whose one-shot interest fired; re-armed at the next wait. Waiter only. */
    private final List<SelectionKey> fired = new ArrayList<>();
    private volatile boolean waiting;

    ShmCompletionChannel(final ShmVerbsContext context, final boolean pollerDoorbells) throws IOException
    {
        this.context = context;
        this.selector = pollerDoorbells ? Selector.open() : null;
    }

    /** @return whether a doorbell wakes the waiter directly (see the class comment) */
    boolean watchesDoorbells()
    {
        return selector != null;
    }

    /**
     * From the next wait on, a doorbell on this socket wakes the waiter directly. Any thread; the socket must be
     * non-blocking already. Does nothing without {@code reverb.shm.pollerDoorbells}.
     */
    void watch(final SocketChannel socket, final ShmCompletionQueue cq)
    {
        if (selector != null)
        {
            toWatch.add(new Watch(socket, cq));
        }
    }

    /**
     * A watched socket was closed: its descriptor is released only once the selectors it is registered with select
     * again, so make this one do so now (a waiter wakes once and loops; otherwise a non-blocking select here). A
     * socket not registered yet leaves the queue (a poller that never sleeps would otherwise keep every socket).
     * Any thread.
     *
     * @param socket the closed socket.
     */
    void socketClosed(final SocketChannel socket)
    {
        final Selector s = selector;
        if (s == null)
        {
            return;
        }
        if (toWatch.removeIf(watch -> watch.socket == socket))
        {
            return; // never registered here
        }
        try
        {
            s.wakeup();
            if (!waiting)
            {
                // Drops cancelled keys; readiness is level-triggered, so what it sees stays for the waiter.
                s.selectNow(key -> { });
            }
        }
        catch (final ClosedSelectorException | IOException ignore)
        {
            // The channel is closed: the selector released everything.
        }
    }

    /** @return sockets waiting to be registered at the next wait (tests) */
    int socketsToWatch()
    {
        return toWatch.size();
    }

    @Override
    protected void beginWait()
    {
        if (selector == null)
        {
            super.beginWait();
            return;
        }
        // Dekker with signal() and wakeup(): waiting is published before the flags are read, and they are set
        // before waiting is read, so either the loop sees the flag or the selector is woken.
        waiting = true;
        for (int i = 0; i < fired.size(); i++)
        {
            final SelectionKey key = fired.get(i);
            try
            {
                key.interestOps(SelectionKey.OP_READ);
            }
            catch (final CancelledKeyException ignore)
            {
                // Its socket was closed.
            }
        }
        fired.clear();
        Watch watch;
        while ((watch = toWatch.poll()) != null)
        {
            try
            {
                watch.socket.register(selector, SelectionKey.OP_READ, watch.cq);
            }
            catch (final ClosedChannelException ignore)
            {
                // Closed before its first wait: nothing to watch.
            }
            catch (final ClosedSelectorException ex)
            {
                // This channel was closed: the wait loop reports it.
                toWatch.clear();
                return;
            }
        }
    }

    @Override
    protected int block(final long remainingNanos) throws IOException
    {
        if (selector == null)
        {
            return super.block(remainingNanos);
        }
        final long millis = selectTimeoutMillis(remainingNanos);
        try
        {
            // A doorbell socket that fired raised its CQ's event (onReady), unless the event thread did first: the
            // loop then returns the events. The event thread reads the frame itself.
            selector.select(onReady, millis);
            return 0;
        }
        catch (final ClosedSelectorException ex)
        {
            throw new IOException("completion channel is closed", ex);
        }
    }

    private void onReady(final SelectionKey key)
    {
        // Waiter thread, inside select: one-shot, until the next wait.
        try
        {
            key.interestOps(0);
        }
        catch (final CancelledKeyException ex)
        {
            return; // its socket was closed meanwhile: not a doorbell
        }
        fired.add(key);
        ((ShmCompletionQueue)key.attachment()).noticedByWaiter();
    }

    /** The waiter noticed a doorbell socket of one of this channel's CQs and raised its event: waiter thread. */
    void doorbellNoticed()
    {
        addEvent();
    }

    @Override
    protected void endWait()
    {
        if (selector == null)
        {
            super.endWait();
            return;
        }
        waiting = false;
    }

    @Override
    protected void wakeWaiter()
    {
        if (selector == null)
        {
            super.wakeWaiter();
        }
        else if (waiting)
        {
            selector.wakeup();
        }
    }

    /** A doorbell socket and the receive CQ it rings for. */
    private record Watch(SocketChannel socket, ShmCompletionQueue cq)
    {
    }

    @Override
    protected void onClose()
    {
        if (selector != null)
        {
            try
            {
                // Wakes a waiter, which then sees closed; deregisters the sockets.
                selector.close();
            }
            catch (final IOException ignore)
            {
                // Closing anyway.
            }
        }
        context.removed(this);
    }
}
