package io.reverb.rpc.internal;

import java.util.ArrayList;
import java.util.List;

/**
 * Streams of one connection by id: open addressing over int keys, so that the per-frame lookup neither boxes nor
 * allocates. Synchronized: the transport thread looks up while callers' threads add and remove.
 */
final class StreamMap
{
    private static final int EMPTY = 0; // stream id 0 is the connection itself, never a stream
    private int[] keys = new int[16];
    private RpcStream[] values = new RpcStream[16];
    private int size;

    synchronized RpcStream get(final int id)
    {
        final int mask = keys.length - 1;
        for (int i = hash(id) & mask; ; i = (i + 1) & mask)
        {
            final int k = keys[i];
            if (k == id)
            {
                return values[i];
            }
            if (k == EMPTY)
            {
                return null;
            }
        }
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
        return all;
    }

    private static int hash(final int id)
    {
        final int h = id * 0x9E3779B9;
        return h ^ (h >>> 16);
    }
}
