package io.reverb.rdma.engine;

import io.reverb.rdma.verbs.ConnectionListener;
import io.reverb.rdma.verbs.ConnectionRequest;
import java.io.IOException;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/**
 * A listening address of an {@link RdmaEngine}, with its accept loop on a thread of its own.
 * Refused handshakes are reported to the engine's error handler and counted.
 */
public final class EngineListener implements AutoCloseable
{
    private final RdmaEngine engine;
    private final ConnectionListener listener;
    private final Consumer<Connection> onAccept;
    private final Thread thread;
    private volatile boolean running = true;
    private volatile long accepted;
    private volatile long refused;

    EngineListener(final RdmaEngine engine, final ConnectionListener listener, final Consumer<Connection> onAccept)
    {
        this.engine = engine;
        this.listener = listener;
        this.onAccept = onAccept;
        this.thread = new Thread(this::acceptLoop, engine.config().name() + "-accept-" + listener.localAddress());
        this.thread.setDaemon(true);
    }

    void start()
    {
        thread.start();
    }

    /** @return the bound address, as {@link RdmaEngine#connect(String)} takes it. */
    public String address()
    {
        return listener.localAddress();
    }

    /** @return connections accepted. */
    public long acceptedCount()
    {
        return accepted;
    }

    /** @return connection requests refused (authentication, version, geometry). */
    public long refusedCount()
    {
        return refused;
    }

    private void acceptLoop()
    {
        while (running)
        {
            final ConnectionRequest request;
            try
            {
                request = listener.accept(TimeUnit.MILLISECONDS.toNanos(200));
            }
            catch (final IOException ex)
            {
                if (running)
                {
                    engine.onError(new EngineException("listener " + address() + " failed", ex));
                }
                return;
            }
            if (request == null)
            {
                continue;
            }
            try
            {
                final EngineConnection connection = engine.accept(request);
                if (connection == null)
                {
                    refused++;
                    continue;
                }
                accepted++;
                try
                {
                    onAccept.accept(connection);
                }
                catch (final Throwable t)
                {
                    engine.onError(new EngineException("accept callback of " + address() + " threw", t));
                }
                engine.startPolling(connection);
            }
            catch (final Throwable ex)
            {
                // Whatever one connection attempt throws (even an Error such as OutOfMemoryError), the listener
                // keeps accepting: a dead accept thread would leave a server that looks up and serves no one.
                engine.onError(new EngineException("accepting a connection on " + address() + " failed", ex));
            }
        }
    }

    /** Stops accepting; established connections stay up. Idempotent. */
    @Override
    public void close()
    {
        running = false;
        listener.close();
        try
        {
            thread.join(2_000);
        }
        catch (final InterruptedException ex)
        {
            Thread.currentThread().interrupt();
        }
        engine.removeListener(this);
    }
}
