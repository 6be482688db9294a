package io.reverb.rdma.provider.shm;

import io.reverb.rdma.provider.base.Tasks;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.SocketChannel;
import java.util.Iterator;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;

/**
 * The context's connection-manager thread (rdma_cm's event channel): reads every connection socket
 * for doorbells and EOF, and runs disconnect handlers. One per context; cold path only, the data
 * path never goes through it.
 */
final class ShmEventLoop implements Runnable
{
    private final ShmVerbsContext context;
    private final Selector selector;
    private final Queue<Runnable> tasks = new ConcurrentLinkedQueue<>();
    private final Thread thread;
    private volatile boolean running = true;

    ShmEventLoop(final ShmVerbsContext context, final String name) throws IOException
    {
        this.context = context;
        this.selector = Selector.open();
        this.thread = new Thread(this, name);
        thread.setDaemon(true);
        thread.start();
    }

    boolean inEventLoop()
    {
        return Thread.currentThread() == thread;
    }

    /** Runs the task on the event thread (inline if the loop has stopped). */
    void execute(final Runnable task)
    {
        if (!running)
        {
            task.run();
            return;
        }
        tasks.add(task);
        selector.wakeup();
    }

    /** Starts watching a connected QP's socket. */
    void register(final ShmQueuePair qp)
    {
        execute(() ->
        {
            try
            {
                qp.socket().configureBlocking(false);
                qp.socket().register(selector, SelectionKey.OP_READ, qp);
                qp.watchDoorbells();
            }
            catch (final ClosedChannelException ex)
            {
                qp.peerGone();
            }
            catch (final IOException ex)
            {
                qp.peerGone();
            }
        });
    }

    @Override
    public void run()
    {
        while (running)
        {
            try
            {
                // No time limit: tasks (execute) and close() wake the selector; nothing here is timed.
                selector.select();
                runTasks();
                final Iterator<SelectionKey> keys = selector.selectedKeys().iterator();
                while (keys.hasNext())
                {
                    final SelectionKey key = keys.next();
                    keys.remove();
                    final ShmQueuePair qp = (ShmQueuePair)key.attachment();
                    if (!key.isValid())
                    {
                        continue;
                    }
                    readFrames(key, qp);
                }
            }
            catch (final Throwable ex)
            {
                if (running)
                {
                    context.errorHandler(ex);
                }
            }
        }
        runTasks();
        try
        {
            selector.close();
        }
        catch (final IOException ignore)
        {
            // Closing anyway.
        }
    }

    private void readFrames(final SelectionKey key, final ShmQueuePair qp)
    {
        final SocketChannel socket = (SocketChannel)key.channel();
        final ByteBuffer pending = qp.readBuffer();
        try
        {
            while (true)
            {
                final int read = socket.read(pending);
                if (read < 0)
                {
                    key.cancel();
                    qp.peerGone();
                    return;
                }
                pending.flip();
                while (pending.remaining() >= Handshake.FRAME_LENGTH)
                {
                    final int type = pending.getInt();
                    final int arg = pending.getInt();
                    if (type == Handshake.FRAME_DOORBELL)
                    {
                        context.doorbell(arg);
                    }
                }
                pending.compact();
                if (read == 0)
                {
                    return;
                }
            }
        }
        catch (final IOException ex)
        {
            key.cancel();
            qp.peerGone();
        }
    }

    private void runTasks()
    {
        Tasks.runAll(tasks, context::errorHandler);
    }

    void close()
    {
        running = false;
        selector.wakeup();
        if (!inEventLoop())
        {
            try
            {
                thread.join(5_000);
                runTasks();
            }
            catch (final InterruptedException ex)
            {
                Thread.currentThread().interrupt();
            }
        }
    }
}
