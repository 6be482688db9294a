package io.reverb.rpc.internal;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.ArrayList;
import java.util.List;

/**
 * Streams of one connection by id: open addressing over int keys, so that the per-frame lookup neither boxes nor
 * allocates. The transport thread looks up while callers' threads add and remove: changes take this map's monitor,
 * lookups take none (a sequence lock, as {@code StampedLock}'s optimistic read).
 *
 * <h2>Lookups without the monitor</h2>
 * Every change runs under the monitor between two increments of {@link #version}: odd while the table changes, even
 * when it is whole. A lookup reads an even version, probes the arrays, and keeps its answer only if the version is
 * still the same; otherwise it tries again, and after {@value #OPTIMISTIC_TRIES} tries (a writer preempted mid-change)
 * it looks up under the monitor. A probe of a table that is changing under it may read anything, so it is bounded
 * (one pass over the table, arrays of one generation) and its answer is discarded.
 */
final class StreamMap
{
    private static final int EMPTY = 0; // stream id 0 is the connection itself, never a stream
    private static final int OPTIMISTIC_TRIES = 4;
    private static final VarHandle VERSION;

    static
    {
        try
        {
            VERSION = MethodHandles.lookup().findVarHandle(StreamMap.class, "version", int.class);
        }
        catch (final ReflectiveOperationException e)
        {
            throw new ExceptionInInitializerError(e);
        }
    }

    private int[] keys = new int[16];
    private RpcStream[] values = new RpcStream[16];
    private int size;
    /** Odd while a change is under way (written under the monitor only, read by lookups without it). */
    @SuppressWarnings("unused") // through VERSION
    private volatile int version;

    RpcStream get(final int id)
    {
        for (int attempt = 0; attempt < OPTIMISTIC_TRIES; attempt++)
        {
            final int before = (int)VERSION.getAcquire(this);
            if ((before & 1) == 0)
            {
                final int[] k = keys;
                final RpcStream[] v = values;
                // arrays of two generations (read while a rehash replaced them) cannot be probed together
                final int slot = k.length == v.length ? slotOf(k, id) : TORN;
                final RpcStream found = slot >= 0 ? v[slot] : null;
                VarHandle.acquireFence(); // the probe's reads happen before the version is read again
                if (slot != TORN && (int)VERSION.getOpaque(this) == before)
                {
                    return found;
                }
            }
            Thread.onSpinWait();
        }
        synchronized (this)
        {
            final int slot = slotOf(keys, id);
            return slot >= 0 ? values[slot] : null;
        }
    }

    /** {@link #slotOf}'s answer for a table that is changing under the probe. */
    private static final int TORN = -2;

    /**
     * @return the id's slot, -1 if absent, or {@link #TORN} if one pass found no empty slot (a whole table is at most
     * half full: only a table changing under a lookup without the monitor looks like that).
     */
    private static int slotOf(final int[] keys, final int id)
    {
        final int mask = keys.length - 1;
        int i = hash(id) & mask;
        for (int probes = 0; probes < keys.length; probes++, i = (i + 1) & mask)
        {
            final int k = keys[i];
            if (k == id)
            {
                return i;
            }
            if (k == EMPTY)
            {
                return -1;
            }
        }
        return TORN;
    }

    /** Under the monitor, before changing the table: lookups from now on retry until {@link #endChange}. */
    private void beginChange()
    {
        VERSION.setOpaque(this, (int)VERSION.getOpaque(this) + 1);
        VarHandle.storeStoreFence(); // the odd version is visible before any change to the arrays
    }

    /** Under the monitor, after changing the table: the change is visible with the even version. */
    private void endChange()
    {
        VERSION.setRelease(this, (int)VERSION.getOpaque(this) + 1);
    }

    synchronized void put(final int id, final RpcStream stream)
    {
        putHeld(id, stream);
    }

    /**
     * {@link #put}, by a caller that holds this map's monitor already (the server's drain lock is this monitor).
     *
     * @param id     the stream id.
     * @param stream the stream.
     */
    void putHeld(final int id, final RpcStream stream)
    {
        assert Thread.holdsLock(this);
        if (id == EMPTY)
        {
            throw new IllegalArgumentException("stream id 0");
        }
        beginChange();
        try
        {
            if ((size + 1) * 2 > keys.length)
            {
                rehash(keys.length * 2);
            }
            final int mask = keys.length - 1;
            for (int i = hash(id) & mask; ; i = (i + 1) & mask)
            {
                if (keys[i] == EMPTY || keys[i] == id)
                {
                    if (keys[i] == EMPTY)
                    {
                        size++;
                    }
                    keys[i] = id;
                    values[i] = stream;
                    return;
                }
            }
        }
        finally
        {
            endChange();
        }
    }

    synchronized RpcStream remove(final int id)
    {
        final int mask = keys.length - 1;
        for (int i = hash(id) & mask; ; i = (i + 1) & mask)
        {
            final int k = keys[i];
            if (k == EMPTY)
            {
                return null;
            }
            if (k == id)
            {
                beginChange();
                final RpcStream removed = values[i];
                keys[i] = EMPTY;
                values[i] = null;
                size--;
                // re-insert the rest of the cluster so that lookups past the hole still find their keys
                for (int j = (i + 1) & mask; keys[j] != EMPTY; j = (j + 1) & mask)
                {
                    final int key = keys[j];
                    final RpcStream value = values[j];
                    keys[j] = EMPTY;
                    values[j] = null;
                    size--;
                    putNoResize(key, value);
                }
                endChange();
                return removed;
            }
        }
    }

    private void putNoResize(final int id, final RpcStream stream)
    {
        final int mask = keys.length - 1;
        int i = hash(id) & mask;
        while (keys[i] != EMPTY)
        {
            i = (i + 1) & mask;
        }
        keys[i] = id;
        values[i] = stream;
        size++;
    }

    private void rehash(final int capacity)
    {
        final int[] oldKeys = keys;
        final RpcStream[] oldValues = values;
        keys = new int[capacity];
        values = new RpcStream[capacity];
        size = 0;
        for (int i = 0; i < oldKeys.length; i++)
        {
            if (oldKeys[i] != EMPTY)
            {
                putNoResize(oldKeys[i], oldValues[i]);
            }
        }
    }

    synchronized boolean isEmpty()
    {
        return size == 0;
    }

    synchronized int size()
    {
        return size;
    }

    /**
     * @return the ids, a snapshot.
     */
    synchronized int[] ids()
    {
        final int[] ids = new int[size];
        int n = 0;
        for (final int k : keys)
        {
            if (k != EMPTY)
            {
                ids[n++] = k;
            }
        }
        return ids;
    }

    /**
     * Removes and returns every stream.
     *
     * @return the streams that were present.
     */
    synchronized List<RpcStream> clear()
    {
        final List<RpcStream> all = new ArrayList<>(size);
        beginChange();
        for (int i = 0; i < keys.length; i++)
        {
            if (keys[i] != EMPTY)
            {
                all.add(values[i]);
                keys[i] = EMPTY;
                values[i] = null;
            }
        }
        size = 0;
        endChange();
        return all;
    }

    private static int hash(final int id)
    {
        final int h = id * 0x9E3779B9;
        return h ^ (h >>> 16);
    }
}
