package io.reverb.rdma.engine;

import io.reverb.rdma.verbs.ConnectionListener;
import io.reverb.rdma.verbs.ConnectionRequest;
import java.io.IOException;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;

/**
 * A listening address of an {@link RdmaEngine}, with its accept loop on a thread of its own.
 * Refused handshakes are reported to the engine's error handler and counted.
 *
 * <p>With an auth token, an accepted connection is polled at once but passed to the callback only once
 * the connector has proven it holds the token (its first batch; see the package doc), on a thread of
 * this listener's; one that does not within the handshake deadline is refused.
 */
public final class EngineListener implements AutoCloseable
{
    /** How often the accept thread checks the proof deadlines of authenticating connections while there are any. */
    static final long AUTH_CHECK_NANOS = TimeUnit.MILLISECONDS.toNanos(200);

    private final RdmaEngine engine;
    private final ConnectionListener listener;
    private final Consumer<Connection> onAccept;
    private final Thread thread;
    private volatile boolean running = true;
    private final AtomicLong accepted = new AtomicLong();
    private final AtomicLong refused = new AtomicLong();
    /** Connections accepted whose proof is outstanding (accept thread checks their deadlines). */
    private final ConcurrentLinkedQueue<EngineConnection> authenticating = new ConcurrentLinkedQueue<>();
    /** Runs the callback for connections admitted on a poller thread (only with a token). */
    private volatile ExecutorService admitter;

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
        return accepted.get();
    }

    /** @return connection requests refused (authentication, version, geometry, connection limit). */
    public long refusedCount()
    {
        return refused.get();
    }

    private void acceptLoop()
    {
        while (running)
        {
            final ConnectionRequest request;
            try
            {
                // Blocks until a request or close() (which makes accept throw), but wakes to check the deadlines of
                // connections still proving the token while there are any.
                request = listener.accept(authenticating.isEmpty() ? Long.MAX_VALUE : AUTH_CHECK_NANOS);
            }
            catch (final IOException ex)
            {
                if (running)
                {
                    engine.onError(new EngineException("listener " + address() + " failed", ex));
                }
                return;
            }
            expireAuthentications();
            if (request == null)
            {
                continue;
            }
            try
            {
                final EngineConnection connection = engine.accept(request, authOutcome);
                if (connection == null)
                {
                    refused.incrementAndGet();
                    continue;
                }
                if (connection.authGate == null)
                {
                    connection.publishCounters(); // no token: the handshake is all the authentication there is
                    accepted.incrementAndGet();
                    runCallback(connection);
                    engine.startPolling(connection);
                    continue;
                }
                final AuthGate gate = connection.authGate;
                authenticating.add(connection);
                connection.onClose(cause -> gate.refuse(connection, new HandshakeException(
                    HandshakeException.Reason.AUTHENTICATION, "refused connection from " + request.remoteAddress() +
                    ": it went away before proving it holds the authentication token" +
                    (cause == null ? "" : " (" + cause.getMessage() + ")"))));
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

    private void expireAuthentications()
    {
        if (authenticating.isEmpty())
        {
            return;
        }
        final long now = System.nanoTime();
        for (final EngineConnection connection : authenticating)
        {
            final AuthGate gate = connection.authGate;
            if (gate == null)
            {
                authenticating.remove(connection);
            }
            else if (gate.expired(now))
            {
                authenticating.remove(connection);
                gate.refuse(connection, new HandshakeException(HandshakeException.Reason.AUTHENTICATION,
                    "refused connection from " + connection.remoteAddress() + ": no proof of the authentication token within " +
                    TimeUnit.NANOSECONDS.toMillis(engine.config().verbsConfig().handshakeTimeoutNanos()) + " ms"));
            }
        }
    }

    private void runCallback(final EngineConnection connection)
    {
        try
        {
            onAccept.accept(connection);
        }
        catch (final Throwable t)
        {
            engine.onError(new EngineException("accept callback of " + address() + " threw", t));
        }
    }

    private final AuthGate.Outcome authOutcome = new AuthGate.Outcome()
    {
        @Override
        public void admitted(final EngineConnection connection)
        {
            onAdmitted(connection);
        }

        @Override
        public void refused(final EngineConnection connection, final HandshakeException why)
        {
            onRefused(connection, why);
        }
    };

    /** A poller admitted an authenticating connection: run the callback off the poller thread. */
    private void onAdmitted(final EngineConnection connection)
    {
        // On the poller, before the admitting batch is processed: only now does the connection cost the counters file.
        connection.publishCounters();
        authenticating.remove(connection);
        accepted.incrementAndGet();
        ExecutorService executor = admitter;
        if (executor == null)
        {
            synchronized (this)
            {
                executor = admitter;
                if (executor == null)
                {
                    executor = Executors.newSingleThreadExecutor(r ->
                    {
                        final Thread t = new Thread(r, engine.config().name() + "-admit-" + address());
                        t.setDaemon(true);
                        return t;
                    });
                    admitter = executor;
                }
            }
        }
        try
        {
            executor.execute(() -> runCallback(connection));
        }
        catch (final RejectedExecutionException ex)
        {
            connection.abort(new EngineException("listener " + address() + " closed while admitting a connection"));
        }
    }

    /** An authenticating connection failed its proof, ran out of time or went away first. */
    private void onRefused(final EngineConnection connection, final HandshakeException why)
    {
        authenticating.remove(connection);
        refused.incrementAndGet();
        engine.onError(why);
        connection.abort(why);
    }

    /** Stops accepting; established connections stay up. Idempotent. */
    @Override
    public void close()
    {
        running = false;
        listener.close();
        final ExecutorService executor = admitter;
        if (executor != null)
        {
            executor.shutdown();
        }
        try
        {
            thread.join(2_000);
        }
        catch (final InterruptedException ex)
        {
            Thread.currentThread().interrupt();
        }
        // Nobody checks their deadlines any more: connections still unproven are refused now.
        for (final EngineConnection connection : authenticating)
        {
            final AuthGate gate = connection.authGate;
            if (gate != null)
            {
                gate.refuse(connection, new HandshakeException(HandshakeException.Reason.UNAVAILABLE,
                    "refused connection from " + connection.remoteAddress() + ": listener " + address() + " closed"));
            }
        }
        authenticating.clear();
        engine.removeListener(this);
    }
}
