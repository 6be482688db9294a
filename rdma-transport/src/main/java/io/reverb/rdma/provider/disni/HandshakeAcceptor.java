package io.reverb.rdma.provider.disni;

import java.io.BufferedInputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.util.Set;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The TCP side of an {@code rdma://} listener: accepts sockets on one thread and reads each connector's
 * handshake REQUEST on a thread of its own, with the connect timeout, so that a connector that stalls (or a
 * TCP health check that connects and says nothing) delays nobody else. Requests read in full queue up for
 * {@link #take(long)}. At most {@value #MAX_PENDING} handshakes are read or queued at once; sockets beyond
 * that are closed at once (counted in {@link #refused()}).
 */
final class HandshakeAcceptor implements AutoCloseable
{
    /** Handshakes in progress or waiting to be taken, at most. */
    static final int MAX_PENDING = 64;

    /** A connector whose REQUEST has been read; the socket is still open for the answer. */
    record Pending(Socket socket, DataInputStream in, DataOutputStream out, ByteBuffer privateData)
    {
    }

    private final ServerSocket serverSocket;
    private final long handshakeTimeoutNanos;
    private final String name;
    private final BlockingQueue<Pending> ready = new LinkedBlockingQueue<>();
    private final Semaphore permits = new Semaphore(MAX_PENDING);
    private final Set<Socket> reading = ConcurrentHashMap.newKeySet();
    private final AtomicLong refused = new AtomicLong();
    private final AtomicLong dropped = new AtomicLong();
    private final Thread acceptThread;
    private volatile boolean closed;

    /**
     * @param bind                  TCP address.
     * @param backlog               listen backlog.
     * @param handshakeTimeoutNanos how long a connector may take to send its REQUEST.
     * @param name                  thread name prefix.
     * @throws IOException if the address cannot be bound.
     */
    HandshakeAcceptor(final InetSocketAddress bind, final int backlog, final long handshakeTimeoutNanos, final String name)
        throws IOException
    {
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
     * @param timeoutNanos maximum wait.
     * @return the next connector whose REQUEST was read, or null on timeout.
     * @throws IOException if closed.
     */
    Pending take(final long timeoutNanos) throws IOException
    {
        if (closed)
        {
            throw new IOException("listener is closed");
        }
        final Pending pending;
        try
        {
            pending = ready.poll(Math.max(0, timeoutNanos), TimeUnit.NANOSECONDS);
        }
        catch (final InterruptedException ex)
        {
            Thread.currentThread().interrupt();
            return null;
        }
        if (pending != null)
        {
            permits.release();
            if (closed)
            {
                DisniVerbsContext.quietly(pending.socket()::close);
                throw new IOException("listener is closed");
            }
        }
        return pending;
    }

    /** @return sockets closed at once because {@value #MAX_PENDING} handshakes were pending. */
    long refused()
    {
        return refused.get();
    }

    /** @return sockets dropped because they sent no valid REQUEST in time. */
    long dropped()
    {
        return dropped.get();
    }

    private void acceptLoop()
    {
        while (!closed)
        {
            final Socket socket;
            try
            {
                socket = serverSocket.accept();
            }
            catch (final IOException ex)
            {
                if (closed)
                {
                    return;
                }
                // e.g. EMFILE: back off a little rather than spin.
                sleepQuietly();
                continue;
            }
            if (!permits.tryAcquire())
            {
                refused.incrementAndGet();
                DisniVerbsContext.quietly(socket::close);
                continue;
            }
            reading.add(socket);
            final Thread reader = new Thread(() -> readRequest(socket), name + "-handshake");
            reader.setDaemon(true);
            reader.start();
        }
    }

    private void readRequest(final Socket socket)
    {
        boolean queued = false;
        try
        {
            socket.setTcpNoDelay(true);
            socket.setSoTimeout(DisniVerbsContext.millisUntil(System.nanoTime() + handshakeTimeoutNanos));
            final DataInputStream in = new DataInputStream(new BufferedInputStream(socket.getInputStream()));
            final DataOutputStream out = new DataOutputStream(socket.getOutputStream());
            final Handshake.Message request = Handshake.read(in, Handshake.REQUEST);
            if (!closed)
            {
                ready.add(new Pending(socket, in, out, request.privateData()));
                queued = true;
            }
        }
        catch (final IOException | RuntimeException ex)
        {
            // Not a Reverb peer, too slow, or gone mid-handshake: drop it; the others are unaffected.
            dropped.incrementAndGet();
        }
        finally
        {
            reading.remove(socket);
            if (!queued)
            {
                permits.release();
                DisniVerbsContext.quietly(socket::close);
            }
            else if (closed)
            {
                drain();
            }
        }
    }

    private static void sleepQuietly()
    {
        try
        {
            Thread.sleep(10);
        }
        catch (final InterruptedException ex)
        {
            Thread.currentThread().interrupt();
        }
    }

    private void drain()
    {
        Pending pending;
        while ((pending = ready.poll()) != null)
        {
            permits.release();
            DisniVerbsContext.quietly(pending.socket()::close);
        }
    }

    @Override
    public void close()
    {
        closed = true;
        DisniVerbsContext.quietly(serverSocket::close);
        for (final Socket socket : reading)
        {
            DisniVerbsContext.quietly(socket::close);
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
