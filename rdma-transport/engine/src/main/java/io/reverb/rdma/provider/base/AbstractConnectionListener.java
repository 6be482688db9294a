package io.reverb.rdma.provider.base;

import io.reverb.rdma.verbs.ConnectionListener;
import io.reverb.rdma.verbs.ConnectionRequest;
import java.io.IOException;

/**
 * What every provider's listener does the same way: {@link #accept} refuses once closed, and {@link #close()}
 * is idempotent, releasing the listener's resources once. Where requests come from ({@link #take}) and what
 * closing releases ({@link #release}) stay in the provider.
 */
public abstract class AbstractConnectionListener implements ConnectionListener
{
    private volatile boolean closed;

    @Override
    public final ConnectionRequest accept(final long timeoutNanos) throws IOException
    {
        if (closed)
        {
            throw new IOException("listener " + this + " is closed");
        }
        return take(timeoutNanos);
    }

    /**
     * Waits for the next complete connection request.
     *
     * @param timeoutNanos how long to wait.
     * @return the request, or null on timeout.
     * @throws IOException if the listener was closed meanwhile or failed.
     */
    protected abstract ConnectionRequest take(long timeoutNanos) throws IOException;

    /** @return true once {@link #close()} was called. */
    protected final boolean isClosed()
    {
        return closed;
    }

    @Override
    public final void close()
    {
        if (closed)
        {
            return;
        }
        closed = true;
        release();
    }

    /** Called once by the first {@link #close()}: stop listening and unregister from the context. */
    protected abstract void release();
}
