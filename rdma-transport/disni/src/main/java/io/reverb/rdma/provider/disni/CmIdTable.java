package io.reverb.rdma.provider.disni;

import com.ibm.disni.verbs.RdmaCmId;
import com.ibm.disni.verbs.RdmaEventChannel;
import com.ibm.disni.verbs.impl.NatCmaIdPrivate;
import com.ibm.disni.verbs.impl.NatRdmaEventChannel;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.util.HashMap;
import java.util.Map;

/**
 * Makes DiSNi 2.1's table of rdma_cm ids safe to use from several threads, and stops it growing.
 *
 * <p>DiSNi's {@code NatRdmaEventChannel} maps native id handles to {@code NatCmaIdPrivate} objects in a plain
 * {@code HashMap} ({@code idMap}): {@code RdmaCmNat.createId} writes it on the caller's thread, and
 * {@code getCmEvent} reads it (and writes it, for a CONNECT_REQUEST) on the dispatcher thread. Unsynchronised,
 * a concurrent resize can make a read miss: the event is then delivered without its id (ESTABLISHED or
 * DISCONNECTED lost) or {@code getCmEvent} throws a NullPointerException on a CONNECT_REQUEST. Nothing ever
 * removes an entry either, so every connection leaks one.
 *
 * <p>So when a context opens, {@link #install} replaces that map with a {@link SynchronizedIdMap} (a
 * {@code HashMap}, as the field's type requires, whose every method DiSNi calls is synchronised), and
 * {@link #forget} removes an id once it is destroyed. If the field cannot be replaced (a DiSNi other than
 * 2.1), {@link #install} says so and the context serialises id creation with {@code getCmEvent} instead
 * (see {@link CmEventDispatcher#serialiseWithCmEvents}); ids then still leak one entry per connection.
 */
final class CmIdTable
{
    private static final Field ID_MAP = idMapField();

    private CmIdTable()
    {
    }

    /**
     * @param channel DiSNi event channel.
     * @return true if its id table is now thread-safe (and {@link #forget} works), false if it could not be
     *         replaced.
     */
    static boolean install(final RdmaEventChannel channel)
    {
        if (ID_MAP == null || !(channel instanceof NatRdmaEventChannel))
        {
            return false;
        }
        try
        {
            synchronized (channel)
            {
                final Object current = ID_MAP.get(channel);
                if (current instanceof SynchronizedIdMap)
                {
                    return true;
                }
                final SynchronizedIdMap replacement = new SynchronizedIdMap();
                if (current instanceof Map)
                {
                    for (final Map.Entry<?, ?> entry : ((Map<?, ?>)current).entrySet())
                    {
                        replacement.put(entry.getKey(), entry.getValue());
                    }
                }
                ID_MAP.set(channel, replacement);
                return true;
            }
        }
        catch (final IllegalAccessException | RuntimeException ex)
        {
            return false;
        }
    }

    /**
     * Removes a destroyed id from its channel's table (no-op if the table was not {@link #install}ed).
     *
     * @param channel the id's channel.
     * @param id      the id, already destroyed.
     */
    static void forget(final RdmaEventChannel channel, final RdmaCmId id)
    {
        if (ID_MAP == null || !(channel instanceof NatRdmaEventChannel) || !(id instanceof NatCmaIdPrivate))
        {
            return;
        }
        try
        {
            final Object table = ID_MAP.get(channel);
            if (table instanceof SynchronizedIdMap)
            {
                // Only if the entry is still this id: another id may since have taken its (freed) address.
                ((SynchronizedIdMap)table).remove(((NatCmaIdPrivate)id).getObjId(), id);
            }
        }
        catch (final IllegalAccessException | RuntimeException ex)
        {
            // table unreachable: the entry stays (one small object)
        }
    }

    /**
     * @param channel DiSNi event channel.
     * @return entries in its id table, or -1 if unknown (for tests and diagnostics).
     */
    static int size(final RdmaEventChannel channel)
    {
        if (ID_MAP == null || !(channel instanceof NatRdmaEventChannel))
        {
            return -1;
        }
        try
        {
            final Object table = ID_MAP.get(channel);
            return table instanceof Map ? ((Map<?, ?>)table).size() : -1;
        }
        catch (final IllegalAccessException | RuntimeException ex)
        {
            return -1;
        }
    }

    private static Field idMapField()
    {
        try
        {
            final Field field = NatRdmaEventChannel.class.getDeclaredField("idMap");
            if (field.getType() != HashMap.class || Modifier.isFinal(field.getModifiers()))
            {
                return null;
            }
            field.setAccessible(true);
            return field;
        }
        catch (final NoSuchFieldException | RuntimeException | LinkageError ex)
        {
            return null;
        }
    }

    /** A {@code HashMap} whose operations are synchronised on the map. */
    @SuppressWarnings({"rawtypes", "unchecked", "serial"})
    static final class SynchronizedIdMap extends HashMap
    {
        @Override
        public synchronized Object get(final Object key)
        {
            return super.get(key);
        }

        @Override
        public synchronized Object put(final Object key, final Object value)
        {
            return super.put(key, value);
        }

        @Override
        public synchronized Object remove(final Object key)
        {
            return super.remove(key);
        }

        @Override
        public synchronized boolean remove(final Object key, final Object value)
        {
            return super.remove(key, value);
        }

        @Override
        public synchronized boolean containsKey(final Object key)
        {
            return super.containsKey(key);
        }

        @Override
        public synchronized int size()
        {
            return super.size();
        }

        @Override
        public synchronized void clear()
        {
            super.clear();
        }
    }
}
