package io.reverb.rdma.provider.disni;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/**
 * rdma_cm CONNECT_REQUESTs waiting for the handshake that claims them, by the connector's rdma_cm source
 * {@code ip:port}. A request nobody claims within {@code ttlNanos} is handed to {@code expire} (which
 * destroys its id: the kernel then rejects it). Expiry runs from {@link #expire(long)}, which the context's
 * rdma_cm dispatcher calls after every poll slice, so requests expire on time even when no other request
 * arrives. A second request from the same source replaces (and expires) the first. At most {@code maxParked} wait:
 * a request beyond that expires the oldest (a peer sending CONNECT_REQUESTs from many source ports without the
 * handshake that claims them would otherwise hold an rdma_cm id each, for everyone's cost, until they expire; a
 * genuine request is claimed within a round trip, so it is rarely the oldest). Thread-safe.
 *
 * @param <T> the parked item (an rdma_cm id).
 */
final class ParkedRequests<T>
{
    private record Parked<T>(T item, long arrivedNanos)
    {
    }

    private final long ttlNanos;
    private final int maxParked;
    private final Consumer<T> expire;
    private final Map<String, Parked<T>> parked = new LinkedHashMap<>();
    private boolean closed;

    /**
     * @param ttlNanos  how long a request may wait for its claim.
     * @param maxParked requests that may wait at once; more expire the oldest.
     * @param expire    receives each request that expired, was replaced, evicted or left at close (outside the lock).
     */
    ParkedRequests(final long ttlNanos, final int maxParked, final Consumer<T> expire)
    {
        this.ttlNanos = ttlNanos;
        this.maxParked = maxParked;
        this.expire = expire;
    }

    /**
     * @param source     connector's rdma_cm {@code ip:port}.
     * @param item       its request.
     * @param nowNanos   current time.
     */
    void park(final String source, final T item, final long nowNanos)
    {
        final Parked<T> previous;
        Parked<T> evicted = null;
        synchronized (parked)
        {
            if (closed)
            {
                previous = new Parked<>(item, nowNanos);
            }
            else
            {
                previous = parked.remove(source); // a replacement goes to the end: the newest, never the oldest
                parked.put(source, new Parked<>(item, nowNanos));
                if (parked.size() > maxParked)
                {
                    final Iterator<Parked<T>> oldest = parked.values().iterator();
                    evicted = oldest.next();
                    oldest.remove();
                }
                parked.notifyAll();
            }
        }
        if (previous != null)
        {
            expire.accept(previous.item());
        }
        if (evicted != null)
        {
            expire.accept(evicted.item());
        }
    }

    /**
     * Takes the request from {@code source}, waiting for it until {@code deadlineNanos} ({@link System#nanoTime()}).
     *
     * @param source        connector's rdma_cm {@code ip:port}.
     * @param deadlineNanos give up then.
     * @return the request.
     * @throws IOException on timeout, interrupt or close.
     */
    T claim(final String source, final long deadlineNanos) throws IOException
    {
        synchronized (parked)
        {
            while (true)
            {
                if (closed)
                {
                    throw new IOException("listener is closed");
                }
                final Parked<T> found = parked.remove(source);
                if (found != null)
                {
                    return found.item();
                }
                final long remaining = deadlineNanos - System.nanoTime();
                if (remaining <= 0)
                {
                    throw new IOException("no rdma_cm connect request from " + source + " arrived within the connect timeout");
                }
                try
                {
                    TimeUnit.NANOSECONDS.timedWait(parked, remaining);
                }
                catch (final InterruptedException ex)
                {
                    Thread.currentThread().interrupt();
                    throw new IOException("interrupted while waiting for the connect request of " + source, ex);
                }
            }
        }
    }

    /**
     * Expires every request older than the time to live.
     *
     * @param nowNanos current time.
     * @return how many expired.
     */
    int expire(final long nowNanos)
    {
        final List<T> expired = new ArrayList<>();
        synchronized (parked)
        {
            final Iterator<Parked<T>> it = parked.values().iterator();
            while (it.hasNext())
            {
                final Parked<T> p = it.next();
                if (nowNanos - p.arrivedNanos() > ttlNanos)
                {
                    expired.add(p.item());
                    it.remove();
                }
            }
        }
        expired.forEach(expire);
        return expired.size();
    }

    /** @return requests waiting. */
    int size()
    {
        synchronized (parked)
        {
            return parked.size();
        }
    }

    /** Refuses further requests, expires those waiting and wakes claimers. */
    void close()
    {
        final List<T> left = new ArrayList<>();
        synchronized (parked)
        {
            closed = true;
            for (final Parked<T> p : parked.values())
            {
                left.add(p.item());
            }
            parked.clear();
            parked.notifyAll();
        }
        left.forEach(expire);
    }
}
