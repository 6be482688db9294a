package io.reverb.rdma.provider.handshake;

import io.reverb.common.LogLimiter;
import io.reverb.rdma.verbs.VerbsConfig;
import java.io.IOException;
import java.net.SocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedSelectorException;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The accepting side of a socket-based provider's connection management: one thread accepts sockets and
 * reads every pending handshake at once (non-blocking, one selector), each against its own deadline, so
 * no peer (silent, slow, or sending garbage) can hold the listener up for anyone else.
 *
 * <ul>
 *   <li>At most {@code maxPending} handshakes are read at once: a new socket beyond that evicts the oldest
 *       pending one (so sockets that say nothing cannot keep a client that speaks at once from getting in;
 *       an attacker would have to open sockets faster than a client completes its handshake). At most as
 *       many complete ones wait to be taken by {@link #poll(long)}; beyond that a new socket is closed at once.</li>
 *   <li>A handshake not complete within {@code timeoutNanos} of its accept is dropped. The thread wakes for the
 *       earliest such deadline only; with no handshake pending it blocks until a socket or {@link #close()} comes.</li>
 *   <li>A handshake is read in two steps, a fixed header and then a body whose length the protocol takes
 *       from the header <em>after</em> checking it against its own limit; nothing is read beyond the body,
 *       so what the peer sends next stays in the socket for whoever owns it afterwards.</li>
 *   <li>Every drop is counted and reported, one line each without a stack trace (a refusal is the peer's doing),
 *   rate-limited per kind by a {@link LogLimiter}; a peer
 *       that connects and closes without a byte (a liveness probe) is dropped silently.</li>
 *   <li>When {@code accept()} itself fails (e.g. EMFILE: out of file descriptors) the failure is reported like a
 *       refusal ({@code "accept-failed"}) and the thread stops watching the listening socket for a pause that starts
 *       at 10 ms and doubles per failure in a row up to 1 s ({@link AcceptPause}); an accepted socket resets it.
 *       Otherwise the socket, still acceptable, would wake the selector at once, again and again, for as long as the
 *       condition lasts. Pending handshakes are read, and expire, as usual during the pause; {@link #close()} ends
 *       it at once.</li>
 * </ul>
 *
 * @param <T> what a complete handshake becomes (a provider's connection request).
 */
public final class ListenerHandshakes<T> implements AutoCloseable
{
    /**
     * A provider's handshake framing.
     *
     * @param <T> what a complete handshake becomes.
     */
    public interface Protocol<T>
    {
        /** @return bytes of the fixed header. */
        int headerLength();

        /**
         * @param header the header, position 0, limit {@link #headerLength()}.
         * @return bytes of the body that follows, checked against a local limit.
         * @throws IOException if the header is malformed or announces more than allowed.
         */
        int bodyLength(ByteBuffer header) throws IOException;

        /**
         * Called on accept, before any byte is read (e.g. to check the peer's credentials).
         *
         * @param channel the accepted socket.
         * @throws IOException to refuse the peer; the message is logged.
         */
        default void checkPeer(final SocketChannel channel) throws IOException
        {
        }

        /**
         * Called on accept, after {@link #checkPeer}: what the handshake is read through (e.g. a TLS session).
         *
         * @param channel the accepted socket, non-blocking.
         * @return the stream; by default the socket itself.
         * @throws IOException to refuse the peer; the message is logged.
         */
        default HandshakeStream open(final SocketChannel channel) throws IOException
        {
            return HandshakeStream.of(channel);
        }

        /**
         * @param stream what {@link #open} returned; its socket is in blocking mode and no longer registered.
         * @param header the header (position 0).
         * @param body   the body (position 0).
         * @return the connection request; by default {@link #complete(SocketChannel, ByteBuffer, ByteBuffer)}.
         * @throws IOException if the handshake is malformed; the socket is closed.
         */
        default T complete(final HandshakeStream stream, final ByteBuffer header, final ByteBuffer body) throws IOException
        {
            return complete(stream.channel(), header, body);
        }

        /**
         * @param channel the socket, now in blocking mode and no longer registered with the selector.
         * @param header  the header (position 0).
         * @param body    the body (position 0).
         * @return the connection request.
         * @throws IOException if the handshake is malformed; the socket is closed.
         */
        T complete(SocketChannel channel, ByteBuffer header, ByteBuffer body) throws IOException;

        /** @param request a request never taken (the listener closed): release it. */
        void discard(T request);
    }

    /**
     * A peer refused by the protocol with an answer to send it first (e.g. "this listener requires TLS"), so that
     * the peer's error says why rather than "connection closed".
     */
    public static final class Refusal extends IOException
    {
        private static final long serialVersionUID = 1L;

        private final String kind;
        private final transient ByteBuffer answer;

        /**
         * @param kind    the refusal's kind for the rate limit ({@link LogLimiter} key).
         * @param message why, one line (logged).
         * @param answer  bytes written to the peer (best effort, without blocking) before the socket closes, or null.
         */
        public Refusal(final String kind, final String message, final ByteBuffer answer)
        {
            super(message);
            this.kind = kind;
            this.answer = answer;
        }

        /** @return the kind. */
        public String kind()
        {
            return kind;
        }
    }

    private static final class Pending
    {
        final SocketChannel channel;
        final HandshakeStream stream;
        final String peer;
        final long deadline;
        final ByteBuffer header;
        ByteBuffer body;

        Pending(final HandshakeStream stream, final String peer, final long deadline, final int headerLength)
        {
            this.channel = stream.channel();
            this.stream = stream;
            this.peer = peer;
            this.deadline = deadline;
            this.header = ByteBuffer.allocate(headerLength);
        }
    }

    /** Accepts one socket: {@link ServerSocketChannel#accept()}, or a test's stand-in that fails on demand. */
    @FunctionalInterface
    interface AcceptOne
    {
        /**
         * @return the accepted socket, or null if none is waiting.
         * @throws IOException if accepting failed (e.g. EMFILE).
         */
        SocketChannel accept() throws IOException;
    }

    /** What a refusal with an answer reads of the peer's bytes before closing. */
    private static final int DRAIN_BYTES = 16 * 1024;
    private static final Logger LOG = LoggerFactory.getLogger(ListenerHandshakes.class);

    private final String name;
    private final ServerSocketChannel server;
    private final Protocol<T> protocol;
    private final long timeoutNanos;
    private final int maxPending;
    /** Refusals, one line each, rate-limited per kind; its {@link LogLimiter#offered()} counts them all. */
    private final LogLimiter refusals;
    private final Selector selector;
    /** The listening socket's key: OP_ACCEPT, or nothing while accepting pauses after a failure. */
    private final SelectionKey serverKey;
    private final AcceptOne acceptOne;
    /** Nanosecond clock of the deadlines and of the accept pause. */
    private final LongSupplier clock;
    /** Owned by the handshake thread. */
    private final AcceptPause acceptPause = new AcceptPause();
    /** Owned by the handshake thread: accepting pauses after a failure, until {@link #resumeAt}. */
    private boolean acceptPaused;
    private long resumeAt;
    private final ArrayBlockingQueue<T> ready;
    /** Held to wait in {@link #poll(long)}, and to signal {@link #readyOrClosed}. */
    private final ReentrantLock readyLock = new ReentrantLock();
    /** Signalled when a complete handshake is queued, and when this closes. */
    private final Condition readyOrClosed = readyLock.newCondition();
    private final Thread thread;
    private volatile boolean closed;
    private int pending;

    /**
     * Starts the handshake thread.
     *
     * @param name         the listener, for the thread name and messages.
     * @param server       a bound server socket; this takes it over (puts it in non-blocking mode, closes it).
     * @param protocol     the handshake framing.
     * @param timeoutNanos deadline of each handshake from its accept.
     * @param maxPending   handshakes read at once, and complete ones waiting to be taken.
     * @param refusals     where drops are reported: a limiter with a sink (e.g. a logger's {@code warn}), keyed by the
     *                     refusal's kind; every line names this listener, the peer and the reason.
     * @throws IOException if the selector cannot be opened.
     */
    public ListenerHandshakes(
        final String name,
        final ServerSocketChannel server,
        final Protocol<T> protocol,
        final long timeoutNanos,
        final int maxPending,
        final LogLimiter refusals) throws IOException
    {
        this(name, server, protocol, timeoutNanos, maxPending, refusals, server::accept, System::nanoTime);
    }

    /**
     * As the public constructor, with what tests replace.
     *
     * @param acceptOne accepts one socket of {@code server} ({@code server::accept}).
     * @param clock     nanosecond clock of the handshake deadlines and the accept pause ({@code System::nanoTime}).
     */
    ListenerHandshakes(
        final String name,
        final ServerSocketChannel server,
        final Protocol<T> protocol,
        final long timeoutNanos,
        final int maxPending,
        final LogLimiter refusals,
        final AcceptOne acceptOne,
        final LongSupplier clock) throws IOException
    {
        this.acceptOne = acceptOne;
        this.clock = clock;
        this.name = name;
        this.server = server;
        this.protocol = protocol;
        this.timeoutNanos = timeoutNanos;
        this.maxPending = maxPending;
        this.refusals = refusals;
        this.ready = new ArrayBlockingQueue<>(maxPending);
        this.selector = Selector.open();
        try
        {
            server.configureBlocking(false);
            this.serverKey = server.register(selector, SelectionKey.OP_ACCEPT);
        }
        catch (final IOException ex)
        {
            selector.close();
            throw ex;
        }
        this.thread = new Thread(this::run, "reverb-handshakes-" + name);
        this.thread.setDaemon(true);
        this.thread.start();
    }

    /**
     * @param timeoutNanos how long to wait ({@code Long.MAX_VALUE}: as long as it takes).
     * @return the next complete handshake, or null if none came in time.
     * @throws IOException if the listener is closed, also while this waits ({@link #close()} wakes it).
     */
    public T poll(final long timeoutNanos) throws IOException
    {
        long remaining = Math.max(0, timeoutNanos);
        readyLock.lock();
        try
        {
            while (true)
            {
                if (closed)
                {
                    throw new IOException("listener " + name + " is closed");
                }
                final T request = ready.poll();
                if (request != null)
                {
                    return request;
                }
                if (remaining <= 0)
                {
                    return null;
                }
                if (remaining == Long.MAX_VALUE)
                {
                    readyOrClosed.await();
                }
                else
                {
                    remaining = readyOrClosed.awaitNanos(remaining);
                }
            }
        }
        catch (final InterruptedException ex)
        {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while waiting for a connection on " + name, ex);
        }
        finally
        {
            readyLock.unlock();
        }
    }

    /** Wakes the callers of {@link #poll(long)}: a handshake is queued, or this closed. */
    private void signalReady()
    {
        readyLock.lock();
        try
        {
            readyOrClosed.signalAll();
        }
        finally
        {
            readyLock.unlock();
        }
    }

    /** @return connection attempts refused so far (sockets dropped before the engine saw them), logged or not. */
    public long refused()
    {
        return refusals.offered();
    }

    /**
     * Reports a refusal: one line, rate-limited per kind, counted.
     *
     * @param kind   a short stable word grouping refusals for the rate limit ("malformed", "deadline", "busy", ...).
     * @param peer   the peer's address, or null if unknown.
     * @param reason why, one line.
     */
    private void refused(final String kind, final String peer, final String reason)
    {
        refusals.log(kind, refusalLine(name, peer, reason), null);
    }

    /**
     * @return a limiter that logs refusals as warnings of this class's logger (what a provider's listener gives
     *         {@link ListenerHandshakes}); tests give one with their own sink and clock.
     */
    public static LogLimiter refusalLog()
    {
        return new LogLimiter((line, stack) -> LOG.warn(line, stack));
    }

    /**
     * @param where  the listener, e.g. {@code "tcp://0.0.0.0:7000"}.
     * @param peer   the peer's address, or null if unknown.
     * @param reason why, one line.
     * @return the line that reports a refused connection attempt (every provider's listener words it so).
     */
    public static String refusalLine(final String where, final String peer, final String reason)
    {
        return where + " refused a connection" + (peer == null ? "" : " from " + peer) + ": " + reason;
    }

    /** @return handshakes being read now. */
    public int pendingCount()
    {
        return pending;
    }

    private void run()
    {
        final List<Pending> completed = new ArrayList<>();
        long selectMillis = 0; // no time limit: no handshake pending
        try
        {
            while (!closed)
            {
                selector.select(selectMillis);
                final long now = clock.getAsLong();
                if (acceptPaused && now - resumeAt >= 0)
                {
                    resumeAccepting();
                }
                final Iterator<SelectionKey> keys = selector.selectedKeys().iterator();
                while (keys.hasNext())
                {
                    final SelectionKey key = keys.next();
                    keys.remove();
                    if (!key.isValid())
                    {
                        continue;
                    }
                    if (key.isAcceptable())
                    {
                        acceptAll(now);
                    }
                    else if (key.isReadable() || key.isWritable())
                    {
                        read(key, completed);
                    }
                }
                final long untilNext = earliest(expire(now), acceptPaused ? resumeAt - now : -1);
                if (!completed.isEmpty())
                {
                    // Deregister the cancelled keys so the sockets may go back to blocking mode.
                    selector.selectNow();
                    for (final Pending p : completed)
                    {
                        finish(p);
                    }
                    completed.clear();
                }
                // 0: no time limit (no handshake pending, accepting not paused); else at least 1 ms, rounded up.
                selectMillis = untilNext < 0 ? 0 : Math.max(1, TimeUnit.NANOSECONDS.toMillis(untilNext + 999_999));
            }
        }
        catch (final IOException | ClosedSelectorException ex)
        {
            if (!closed)
            {
                refused("listener-failed", null, "handshake thread stopped: " + ex);
            }
        }
        finally
        {
            shutdown();
        }
    }

    private void acceptAll(final long now)
    {
        while (true)
        {
            final SocketChannel channel;
            try
            {
                channel = acceptOne.accept();
            }
            catch (final IOException ex)
            {
                // E.g. EMFILE: the socket stays acceptable, so trying at the next select would spin; pause instead.
                final long pause = acceptPause.failed();
                pauseAccepting(now + pause);
                refused("accept-failed", null, AcceptPause.reason(ex, pause));
                return;
            }
            if (channel == null)
            {
                return;
            }
            acceptPause.succeeded();
            final String peer = peerOf(channel);
            if (ready.size() >= maxPending)
            {
                closeQuietly(channel);
                refused("busy", peer, maxPending + " complete handshakes wait for the engine to take them (" +
                    VerbsConfig.MAX_PENDING_HANDSHAKES_PROP + ")");
                continue;
            }
            if (pending >= maxPending)
            {
                evictOldest();
            }
            try
            {
                protocol.checkPeer(channel);
                channel.configureBlocking(false);
                channel.register(selector, SelectionKey.OP_READ,
                    new Pending(protocol.open(channel), peer, now + timeoutNanos, protocol.headerLength()));
                pending++;
            }
            catch (final IOException ex)
            {
                closeQuietly(channel);
                refused("peer", peer, ex.getMessage());
            }
        }
    }

    /** Stops watching the listening socket until {@code until}; the run loop resumes it ({@link #resumeAccepting}). */
    private void pauseAccepting(final long until)
    {
        acceptPaused = true;
        resumeAt = until;
        if (serverKey.isValid())
        {
            serverKey.interestOps(0);
        }
    }

    private void resumeAccepting()
    {
        acceptPaused = false;
        if (serverKey.isValid())
        {
            serverKey.interestOps(SelectionKey.OP_ACCEPT);
        }
    }

    /** @return the earlier of two waits in nanoseconds, where -1 is none. */
    private static long earliest(final long a, final long b)
    {
        return a < 0 ? b : b < 0 ? a : Math.min(a, b);
    }

    private void evictOldest()
    {
        SelectionKey oldest = null;
        for (final SelectionKey key : selector.keys())
        {
            if (key.isValid() && key.attachment() instanceof Pending &&
                (oldest == null || ((Pending)key.attachment()).deadline - ((Pending)oldest.attachment()).deadline < 0))
            {
                oldest = key;
            }
        }
        if (oldest != null)
        {
            drop(oldest, (Pending)oldest.attachment(), "evicted: " + maxPending + " handshakes pending and a new " +
                "connection came (" + VerbsConfig.MAX_PENDING_HANDSHAKES_PROP + ")");
        }
    }

    private void read(final SelectionKey key, final List<Pending> completed)
    {
        final Pending p = (Pending)key.attachment();
        try
        {
            if (p.body == null)
            {
                if (p.stream.read(p.header) < 0)
                {
                    drop(key, p, p.header.position() == 0 ? null : "closed during the handshake");
                    return;
                }
                if (p.header.hasRemaining())
                {
                    waitFor(key, p);
                    return;
                }
                p.header.flip();
                p.body = ByteBuffer.allocate(protocol.bodyLength(p.header.asReadOnlyBuffer()));
            }
            if (p.body.hasRemaining() && p.stream.read(p.body) < 0)
            {
                drop(key, p, "closed during the handshake");
                return;
            }
            if (!p.body.hasRemaining())
            {
                key.cancel();
                pending--;
                completed.add(p);
            }
            else
            {
                waitFor(key, p);
            }
        }
        catch (final Refusal ex)
        {
            if (ex.answer != null)
            {
                try
                {
                    p.channel.write(ex.answer.duplicate());
                    // Closing with unread bytes would reset the connection and could destroy the answer: read
                    // what the peer has sent (one buffer, no waiting), end the output, then close.
                    p.channel.read(ByteBuffer.allocate(DRAIN_BYTES));
                    p.channel.shutdownOutput();
                }
                catch (final IOException ignore)
                {
                    // Best effort: the peer may be gone already.
                }
            }
            key.cancel();
            pending--;
            closeQuietly(p.channel);
            refused(ex.kind(), p.peer, ex.getMessage());
        }
        catch (final IOException | RuntimeException ex)
        {
            drop(key, p, "malformed handshake: " + ex.getMessage());
        }
    }

    /** A session with bytes of its own to write (TLS handshake messages) waits for writability too. */
    private static void waitFor(final SelectionKey key, final Pending p)
    {
        key.interestOps(p.stream.wantsWrite() ? SelectionKey.OP_READ | SelectionKey.OP_WRITE : SelectionKey.OP_READ);
    }

    /**
     * Drops the handshakes past their deadline.
     *
     * @return nanoseconds from {@code now} to the earliest deadline of the handshakes still pending, or -1 if none is.
     */
    private long expire(final long now)
    {
        long untilNext = -1;
        for (final SelectionKey key : selector.keys())
        {
            if (key.isValid() && key.attachment() instanceof Pending)
            {
                final Pending p = (Pending)key.attachment();
                final long left = p.deadline - now;
                if (left <= 0)
                {
                    drop(key, p, "no complete handshake within " + TimeUnit.NANOSECONDS.toMillis(timeoutNanos) +
                        " ms (" + VerbsConfig.HANDSHAKE_TIMEOUT_MS_PROP + ")");
                }
                else if (untilNext < 0 || left < untilNext)
                {
                    untilNext = left;
                }
            }
        }
        return untilNext;
    }

    private void drop(final SelectionKey key, final Pending p, final String reason)
    {
        key.cancel();
        pending--;
        closeQuietly(p.channel);
        if (reason != null)
        {
            refused(reason.startsWith("no complete") ? "deadline" : reason.startsWith("evicted") ? "busy" : "malformed",
                p.peer, reason);
        }
    }

    private void finish(final Pending p)
    {
        final T request;
        try
        {
            p.channel.configureBlocking(true);
            p.header.rewind();
            p.body.flip();
            request = protocol.complete(p.stream, p.header.asReadOnlyBuffer(), p.body.asReadOnlyBuffer());
        }
        catch (final IOException | RuntimeException ex)
        {
            closeQuietly(p.channel);
            refused("malformed", p.peer, "malformed handshake: " + ex.getMessage());
            return;
        }
        if (request == null)
        {
            closeQuietly(p.channel);
            return;
        }
        if (closed || !ready.offer(request))
        {
            protocol.discard(request);
            refused("busy", p.peer, "too many complete handshakes wait to be accepted");
            return;
        }
        signalReady();
    }

    private static String peerOf(final SocketChannel channel)
    {
        try
        {
            final SocketAddress address = channel.getRemoteAddress();
            final String text = address == null ? "" : address.toString();
            return text.isEmpty() ? "a local process" : text.startsWith("/") ? text.substring(1) : text;
        }
        catch (final IOException ex)
        {
            return "an unknown peer";
        }
    }

    private void shutdown()
    {
        try
        {
            for (final SelectionKey key : selector.keys())
            {
                if (key.attachment() instanceof Pending)
                {
                    closeQuietly(((Pending)key.attachment()).channel);
                }
            }
        }
        catch (final ClosedSelectorException ignore)
        {
            // Already shut.
        }
        closeQuietly(selector);
        T request;
        while ((request = ready.poll()) != null)
        {
            protocol.discard(request);
        }
    }

    private static void closeQuietly(final AutoCloseable closeable)
    {
        try
        {
            closeable.close();
        }
        catch (final Exception ignore)
        {
            // Closing anyway.
        }
    }

    /** Stops the thread, closes the server socket, every pending socket and every request not taken. */
    @Override
    public void close()
    {
        if (closed)
        {
            return;
        }
        closed = true;
        selector.wakeup();
        signalReady();
        closeQuietly(server);
        if (Thread.currentThread() != thread)
        {
            try
            {
                thread.join(2_000);
            }
            catch (final InterruptedException ex)
            {
                Thread.currentThread().interrupt();
            }
        }
    }
}
