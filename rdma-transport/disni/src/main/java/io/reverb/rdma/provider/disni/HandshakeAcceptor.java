package io.reverb.rdma.provider.disni;

import io.reverb.common.LogLimiter;
import io.reverb.rdma.provider.handshake.AcceptPause;
import io.reverb.rdma.provider.handshake.ListenerHandshakes;
import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.util.Iterator;
import java.util.LinkedHashSet;
import java.util.Set;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.IntFunction;

/**
 * The TCP side of an {@code rdma://} listener: accepts sockets on one thread and runs each connector's part of
 * the {@link Handshake} (REQUEST, OFFER, SOURCE, and the claim of its rdma_cm request) on a thread of its own,
 * within one handshake deadline for all of it ({@link DeadlineInputStream}), so that a connector that stalls,
 * dribbles, or never connects over rdma_cm (or a TCP health check that says nothing) delays nobody else, and the
 * engine's accept thread only ever sees connectors that have done their part. Connectors read in full queue up
 * for {@link #take(long)}.
 *
 * <p>At most {@code maxPending} handshakes are read or queued at once, as on {@code shm://} and {@code tcp://}
 * ({@code reverb.verbs.maxPendingHandshakes}): a new socket beyond that evicts the oldest handshake still being
 * read (so sockets that say nothing cannot keep out a client that speaks at once), or is closed at once if all
 * are complete and waiting. Every drop is counted and reported (one line each, rate-limited per kind by a
 * {@link LogLimiter}); a peer that connects and closes without a byte (a liveness probe) is dropped silently.
 *
 * <p>When {@code accept()} itself fails (e.g. EMFILE: out of file descriptors), the failure is reported like a
 * refusal ({@code "accept-failed"}) and the accept thread pauses, 10 ms at first and twice as long per failure in a
 * row up to 1 s ({@link AcceptPause}), rather than try again at once for as long as the condition lasts; an accepted
 * socket resets the pause and {@link #close()} ends it at once.
 *
 * @param <I> what a claimed rdma_cm request is (DiSNi's {@code RdmaCmId}; anything in tests).
 */
final class HandshakeAcceptor<I> implements AutoCloseable
{
    /** Default of {@code reverb.verbs.maxPendingHandshakes}; kept for tests and documentation. */
    static final int MAX_PENDING = 64;
    /** How long one wait for a connector's rdma_cm request lasts before eviction and close are checked again. */
    static final long CLAIM_SLICE_NANOS = TimeUnit.MILLISECONDS.toNanos(50);

    /** The rdma_cm side the handshake needs: the address to offer, and the claim of a connector's request. */
    interface Claimer<I>
    {
        /** @return the listener's rdma_cm address, sent in OFFER. */
        InetSocketAddress offer();

        /**
         * @param source        the connector's rdma_cm {@code ip:port} (already checked against its TCP peer).
         * @param deadlineNanos give up then.
         * @return its rdma_cm request, now the caller's.
         * @throws IOException if none arrives in time.
         */
        I claim(InetSocketAddress source, long deadlineNanos) throws IOException;

        /** @param id a claimed request nobody will answer (listener closed): destroy it (rejects it). */
        void release(I id);
    }

    /** Accepts one socket: {@link ServerSocket#accept()}, or a test's stand-in that fails on demand. */
    @FunctionalInterface
    interface AcceptOne
    {
        /**
         * @param server the bound listening socket.
         * @return the accepted socket.
         * @throws IOException if accepting failed (e.g. EMFILE), or the socket is closed.
         */
        Socket accept(ServerSocket server) throws IOException;
    }

    /**
     * A connector that has done its part; the socket is still open for the answer.
     *
     * @param <I> the claimed request's type.
     */
    record Pending<I>(Socket socket, DataInputStream in, DataOutputStream out, ByteBuffer privateData, I id)
    {
    }

    /** One socket from accept until it is queued or dropped. */
    private static final class Slot
    {
        final Socket socket;
        /** Guarded by the acceptor: the slot no longer counts against the cap. */
        boolean released;
        /** Closed to make room for a newer socket. */
        volatile boolean evicted;

        Slot(final Socket socket)
        {
            this.socket = socket;
        }
    }

    private final ServerSocket serverSocket;
    private final AcceptOne acceptOne;
    /** Owned by the accept thread. */
    private final AcceptPause acceptPause = new AcceptPause();
    private final long handshakeTimeoutNanos;
    private final int maxPending;
    private final Claimer<I> claimer;
    private final LogLimiter refusals;
    /** The listener as refusal lines name it ({@code rdma://host:port}). */
    private final String where;
    private final String name;
    private final BlockingQueue<Pending<I>> ready = new LinkedBlockingQueue<>();
    /** Guarded by this: sockets whose handshake is being read, oldest first. */
    private final Set<Slot> reading = new LinkedHashSet<>();
    /** Guarded by this: reading plus queued. */
    private int pending;
    private final AtomicLong dropped = new AtomicLong();
    private final Thread acceptThread;
    private volatile boolean closed;

    /**
     * @param bind                  TCP address.
     * @param backlog               listen backlog.
     * @param handshakeTimeoutNanos how long a connector may take for its whole part of the handshake.
     * @param maxPending            handshakes read or queued at once, at most.
     * @param claimer               the rdma_cm side.
     * @param where                 the listener's name in refusal lines, given the bound port.
     * @param refusals              where drops are reported ({@link ListenerHandshakes#refusalLog()} or a test's).
     * @param name                  thread name prefix.
     * @throws IOException if the address cannot be bound.
     */
    HandshakeAcceptor(
        final InetSocketAddress bind,
        final int backlog,
        final long handshakeTimeoutNanos,
        final int maxPending,
        final Claimer<I> claimer,
        final IntFunction<String> where,
        final LogLimiter refusals,
        final String name) throws IOException
    {
        this(bind, backlog, handshakeTimeoutNanos, maxPending, claimer, where, refusals, name, ServerSocket::accept);
    }

    /**
     * As the other constructor, with the accept a test replaces.
     *
     * @param acceptOne accepts one socket of the bound server socket ({@code ServerSocket::accept}).
     */
    HandshakeAcceptor(
        final InetSocketAddress bind,
        final int backlog,
        final long handshakeTimeoutNanos,
        final int maxPending,
        final Claimer<I> claimer,
        final IntFunction<String> where,
        final LogLimiter refusals,
        final String name,
        final AcceptOne acceptOne) throws IOException
    {
        this.acceptOne = acceptOne;
        if (maxPending <= 0)
        {
            throw new IllegalArgumentException("maxPending must be > 0: " + maxPending);
        }
        this.serverSocket = new ServerSocket();
        try
        {
            serverSocket.setReuseAddress(true);
            serverSocket.bind(bind, Math.max(1, backlog));
        }
        catch (final IOException ex)
        {
            DisniVerbsContext.quietly(serverSocket::close);
            throw ex;
        }
        this.handshakeTimeoutNanos = handshakeTimeoutNanos;
        this.maxPending = maxPending;
        this.claimer = claimer;
        this.where = where.apply(serverSocket.getLocalPort());
        this.refusals = refusals;
        this.name = name;
        this.acceptThread = new Thread(this::acceptLoop, name + "-accept");
        this.acceptThread.setDaemon(true);
        this.acceptThread.start();
    }

    /** @return the bound TCP port. */
    int localPort()
    {
        return serverSocket.getLocalPort();
    }

    /**
     * @param timeoutNanos maximum wait ({@code Long.MAX_VALUE}: as long as it takes).
     * @return the next connector that did its part, or null on timeout.
     * @throws IOException if closed, also while this waits ({@link #close()} wakes it).
     */
    Pending<I> take(final long timeoutNanos) throws IOException
    {
        final boolean untimed = timeoutNanos == Long.MAX_VALUE;
        final long deadline = untimed ? 0 : System.nanoTime() + Math.max(0, timeoutNanos);
        final Pending<I> next;
        synchronized (this)
        {
            while (true)
            {
                if (closed)
                {
                    throw new IOException("listener is closed");
                }
                final Pending<I> head = ready.poll();
                if (head != null)
                {
                    pending--;
                    next = head;
                    break;
                }
                final long remaining = untimed ? Long.MAX_VALUE : deadline - System.nanoTime();
                if (remaining <= 0)
                {
                    return null;
                }
                try
                {
                    // Woken by a queued connector or by close(), both under this lock.
                    if (untimed)
                    {
                        wait();
                    }
                    else
                    {
                        TimeUnit.NANOSECONDS.timedWait(this, remaining);
                    }
                }
                catch (final InterruptedException ex)
                {
                    Thread.currentThread().interrupt();
                    return null;
                }
            }
        }
        if (closed)
        {
            discard(next);
            throw new IOException("listener is closed");
        }
        return next;
    }

    /** @return connection attempts dropped before the engine saw them (over the cap, too slow, malformed, ...). */
    long refused()
    {
        return refusals.offered();
    }

    private void refused(final String kind, final String peer, final String reason)
    {
        refusals.log(kind, ListenerHandshakes.refusalLine(where, peer, reason), null);
    }

    /** @return sockets dropped silently (closed without a byte, or at close). */
    long dropped()
    {
        return dropped.get();
    }

    /** @return handshakes being read or queued (for tests). */
    synchronized int pendingCount()
    {
        return pending;
    }

    private void acceptLoop()
    {
        while (!closed)
        {
            final Socket socket;
            try
            {
                socket = acceptOne.accept(serverSocket);
            }
            catch (final IOException ex)
            {
                if (closed)
                {
                    return;
                }
                // E.g. EMFILE: trying again at once would spin for as long as it lasts; pause instead.
                final long pause = acceptPause.failed();
                refused("accept-failed", null, AcceptPause.reason(ex, pause));
                pauseAccepting(pause);
                continue;
            }
            acceptPause.succeeded();
            final Slot slot = new Slot(socket);
            Slot victim = null;
            boolean admitted = true;
            synchronized (this)
            {
                if (pending >= maxPending)
                {
                    final Iterator<Slot> oldest = reading.iterator();
                    if (oldest.hasNext())
                    {
                        // The newcomer takes the oldest reader's place in the count.
                        victim = oldest.next();
                        oldest.remove();
                        victim.released = true;
                        victim.evicted = true;
                    }
                    else
                    {
                        admitted = false;
                    }
                }
                else
                {
                    pending++;
                }
                if (admitted)
                {
                    reading.add(slot);
                }
            }
            if (victim != null)
            {
                DisniVerbsContext.quietly(victim.socket::close);
            }
            if (!admitted)
            {
                refused("busy", peer(socket), maxPending + " complete handshakes are waiting for the " +
                    "engine (reverb.verbs.maxPendingHandshakes); closed at once");
                DisniVerbsContext.quietly(socket::close);
                continue;
            }
            final Thread reader = new Thread(() -> handshake(slot), name + "-handshake");
            reader.setDaemon(true);
            reader.start();
        }
    }

    private void handshake(final Slot slot)
    {
        final Socket socket = slot.socket;
        final long deadline = System.nanoTime() + handshakeTimeoutNanos;
        I id = null;
        boolean queued = false;
        boolean anyByte = false;
        try
        {
            socket.setTcpNoDelay(true);
            final DataInputStream in = new DataInputStream(new BufferedInputStream(new DeadlineInputStream(socket, deadline)));
            final DataOutputStream out = new DataOutputStream(new BufferedOutputStream(socket.getOutputStream()));
            in.mark(1);
            if (in.read() < 0)
            {
                throw new EOFException();
            }
            anyByte = true;
            in.reset();
            final Handshake.Message request = Handshake.read(in, Handshake.REQUEST);
            Handshake.writeOffer(out, claimer.offer());
            out.flush();
            final InetSocketAddress source = Handshake.read(in, Handshake.SOURCE).source();
            DisniConnectionRequest.checkSource(source, socket.getInetAddress(), peer(socket));
            id = claim(slot, source, deadline);
            synchronized (this)
            {
                if (!closed && !slot.evicted)
                {
                    reading.remove(slot);
                    ready.add(new Pending<>(socket, in, out, request.privateData(), id));
                    queued = true;
                    notifyAll(); // a take() waiting
                }
            }
        }
        catch (final IOException | RuntimeException ex)
        {
            refuse(slot, anyByte, ex);
        }
        finally
        {
            if (!queued)
            {
                if (id != null)
                {
                    claimer.release(id);
                }
                release(slot);
                DisniVerbsContext.quietly(socket::close);
            }
            else if (closed)
            {
                drain();
            }
        }
    }

    /**
     * Waits for the connector's rdma_cm request in slices, so that a handshake evicted (or a listener closed) while
     * it waits gives up its thread at once rather than at its deadline: otherwise sockets that send REQUEST and
     * SOURCE and never connect over rdma_cm could pile up threads faster than their deadlines free them.
     */
    private I claim(final Slot slot, final InetSocketAddress source, final long deadline) throws IOException
    {
        while (true)
        {
            final long sliceEnd = Math.min(deadline, System.nanoTime() + CLAIM_SLICE_NANOS);
            try
            {
                return claimer.claim(source, sliceEnd);
            }
            catch (final IOException ex)
            {
                if (slot.evicted || closed || System.nanoTime() - deadline >= 0)
                {
                    throw ex;
                }
            }
        }
    }

    private void refuse(final Slot slot, final boolean anyByte, final Exception ex)
    {
        final String peer = peer(slot.socket);
        if (closed)
        {
            dropped.incrementAndGet();
        }
        else if (slot.evicted)
        {
            refused("busy", peer, "evicted by a newer connection: " + maxPending +
                " handshakes were pending (reverb.verbs.maxPendingHandshakes)");
        }
        else if (ex instanceof SocketTimeoutException)
        {
            refused("deadline", peer, "its part of the rdma:// handshake was not done within " +
                TimeUnit.NANOSECONDS.toMillis(handshakeTimeoutNanos) + " ms (reverb.verbs.handshakeTimeoutMs)");
        }
        else if (ex instanceof EOFException && !anyByte)
        {
            // Connected and closed without a byte: a liveness probe.
            dropped.incrementAndGet();
        }
        else if (ex instanceof EOFException)
        {
            refused("malformed", peer, "closed the connection in the middle of the rdma:// handshake");
        }
        else
        {
            refused("malformed", peer, String.valueOf(ex.getMessage()));
        }
    }

    private synchronized void release(final Slot slot)
    {
        reading.remove(slot);
        if (!slot.released)
        {
            slot.released = true;
            pending--;
        }
    }

    private static String peer(final Socket socket)
    {
        final InetSocketAddress peer = (InetSocketAddress)socket.getRemoteSocketAddress();
        return peer == null ? null : DisniAddress.format(peer);
    }

    /** Waits {@code nanos}, or until {@link #close()} (which notifies this after setting {@link #closed}). */
    private synchronized void pauseAccepting(final long nanos)
    {
        final long end = System.nanoTime() + nanos;
        long remaining = nanos;
        try
        {
            while (!closed && remaining > 0)
            {
                TimeUnit.NANOSECONDS.timedWait(this, remaining);
                remaining = end - System.nanoTime();
            }
        }
        catch (final InterruptedException ex)
        {
            Thread.currentThread().interrupt();
        }
    }

    private void discard(final Pending<I> next)
    {
        claimer.release(next.id());
        DisniVerbsContext.quietly(next.socket()::close);
    }

    private void drain()
    {
        Pending<I> next;
        while ((next = ready.poll()) != null)
        {
            synchronized (this)
            {
                pending--;
            }
            dropped.incrementAndGet();
            discard(next);
        }
    }

    @Override
    public void close()
    {
        closed = true;
        synchronized (this)
        {
            notifyAll(); // a take() waiting throws
        }
        DisniVerbsContext.quietly(serverSocket::close);
        final Slot[] open;
        synchronized (this)
        {
            open = reading.toArray(new Slot[0]);
        }
        for (final Slot slot : open)
        {
            DisniVerbsContext.quietly(slot.socket::close);
        }
        drain();
        try
        {
            acceptThread.join(1_000);
        }
        catch (final InterruptedException ex)
        {
            Thread.currentThread().interrupt();
        }
    }
}
