package io.reverb.rdma.provider.base;

import io.reverb.rdma.verbs.Access;
import io.reverb.rdma.verbs.MemoryRegion;
import java.io.IOException;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * The regions a protection domain owns, and whether it is closed: the part of a PD that every provider
 * keeps the same way. Thread-safe; its monitor is the PD's allocation lock (a provider may hold it across
 * {@link #ensureOpen()} and {@link #tryAdd} so that a concurrent close cannot slip in between).
 *
 * @param <R> the provider's memory region type
 */
public final class RegionList<R extends MemoryRegion>
{
    private final Set<R> regions = new LinkedHashSet<>();
    private boolean closed;

    /**
     * Checks the arguments of {@code ProtectionDomain.allocate}.
     *
     * @throws IllegalArgumentException if the length is not positive or the access has unknown bits
     */
    public static void checkAllocation(final int length, final int access)
    {
        if (length <= 0)
        {
            throw new IllegalArgumentException("length must be > 0: " + length);
        }
        if ((access & ~Access.ALL) != 0)
        {
            throw new IllegalArgumentException("unknown access flags: " + access);
        }
    }

    /** @throws IOException if the protection domain is closed */
    public synchronized void ensureOpen() throws IOException
    {
        if (closed)
        {
            throw new IOException("protection domain is closed");
        }
    }

    /** @return true if the region was added, false if the protection domain is closed (nothing added). */
    public synchronized boolean tryAdd(final R region)
    {
        if (closed)
        {
            return false;
        }
        regions.add(region);
        return true;
    }

    /** Forgets a region that was deregistered. */
    public synchronized void remove(final R region)
    {
        regions.remove(region);
    }

    /** @return how many regions are registered. */
    public synchronized int size()
    {
        return regions.size();
    }

    /**
     * Marks the protection domain closed and deregisters every region still registered (outside this lock:
     * a region's close calls {@link #remove} through its PD).
     *
     * @return false if it was already closed (nothing done)
     */
    public boolean closeAll()
    {
        final List<R> open;
        synchronized (this)
        {
            if (closed)
            {
                return false;
            }
            closed = true;
            open = new ArrayList<>(regions);
            regions.clear();
        }
        for (final R region : open)
        {
            region.close();
        }
        return true;
    }
}
