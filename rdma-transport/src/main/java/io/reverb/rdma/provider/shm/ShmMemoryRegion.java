package io.reverb.rdma.provider.shm;

import io.reverb.rdma.verbs.Access;
import io.reverb.rdma.verbs.MemoryRegion;
import io.reverb.rdma.verbs.ProtectionDomain;
import java.nio.ByteBuffer;
import java.nio.MappedByteBuffer;
import java.nio.file.Path;
import org.agrona.concurrent.UnsafeBuffer;

/**
 * Registered memory: one memory-mapped file per region, a small header followed by the data.
 *
 * <pre>
 *  0        4        8        12       16       20       24        64
 *  +--------+--------+--------+--------+--------+--------+---------+------------------------+
 *  | magic  | state  | lkey   | rkey   | pd id  | access | length  | data (length bytes) ...|
 *  +--------+--------+--------+--------+--------+--------+---------+------------------------+
 * </pre>
 *
 * The header is what a peer checks before one-sided access (the peer maps the file itself, from
 * the index in the key, and never touches the owner's mapping). {@code state} flips to
 * deregistered before the file is removed, so a peer holding an old mapping fails with
 * REM_ACCESS_ERR. Addresses are {@code index << 32 | offset}, keys {@code index << 8 | tag}, and
 * indexes are never reused within a context, so a stale key cannot reach a newer region.
 *
 * <p>{@link #close()} unmaps the owner's mapping at once: like memory after {@code ibv_dereg_mr}, its
 * buffers must not be used after close.
 */
final class ShmMemoryRegion implements MemoryRegion
{
    static final int MAGIC = 0x5256_4D52; // "RVMR"
    static final int MAGIC_OFFSET = 0;
    static final int STATE_OFFSET = 4;
    static final int LKEY_OFFSET = 8;
    static final int RKEY_OFFSET = 12;
    static final int PD_OFFSET = 16;
    static final int ACCESS_OFFSET = 20;
    static final int LENGTH_OFFSET = 24;
    static final int DATA_OFFSET = 64;

    static final int STATE_REGISTERED = 1;
    static final int STATE_DEREGISTERED = 2;

    private final ShmProtectionDomain pd;
    private final int index;
    private final int lkey;
    private final int rkey;
    private final int access;
    private final int length;
    private final Path file;
    private final MappedByteBuffer mapping;
    private final UnsafeBuffer header;
    private final UnsafeBuffer data;
    private final ByteBuffer byteBuffer;
    private volatile boolean registered = true;

    ShmMemoryRegion(
        final ShmProtectionDomain pd,
        final int index,
        final int tag,
        final int access,
        final int length,
        final Path file,
        final MappedByteBuffer mapping)
    {
        this.pd = pd;
        this.index = index;
        this.lkey = (index << 8) | (tag & 0x7F);
        this.rkey = (index << 8) | 0x80 | (tag & 0x7F);
        this.access = access;
        this.length = length;
        this.file = file;
        this.mapping = mapping;
        this.header = new UnsafeBuffer(mapping, 0, DATA_OFFSET);
        this.data = new UnsafeBuffer(mapping, DATA_OFFSET, length);
        this.byteBuffer = mapping.slice(DATA_OFFSET, length);

        header.putInt(LKEY_OFFSET, lkey);
        header.putInt(RKEY_OFFSET, rkey);
        header.putInt(PD_OFFSET, pd.id());
        header.putInt(ACCESS_OFFSET, access);
        header.putInt(LENGTH_OFFSET, length);
        header.putInt(MAGIC_OFFSET, MAGIC);
        // Published last: a peer that maps the file early sees "not registered" rather than a half header.
        header.putIntVolatile(STATE_OFFSET, STATE_REGISTERED);
    }

    /** @return the region index encoded in an address. */
    static int indexOfAddress(final long address)
    {
        return (int)(address >>> 32);
    }

    /** @return the region index encoded in a key. */
    static int indexOfKey(final int key)
    {
        return key >>> 8;
    }

    static long baseAddress(final int index)
    {
        return ((long)index) << 32;
    }

    int index()
    {
        return index;
    }

    Path file()
    {
        return file;
    }

    ShmProtectionDomain shmPd()
    {
        return pd;
    }

    /** @return the data view used by the provider's own copies. */
    UnsafeBuffer data()
    {
        return data;
    }

    @Override
    public ProtectionDomain pd()
    {
        return pd;
    }

    @Override
    public long address()
    {
        return baseAddress(index);
    }

    @Override
    public int length()
    {
        return length;
    }

    @Override
    public int lkey()
    {
        return lkey;
    }

    @Override
    public int rkey()
    {
        return rkey;
    }

    @Override
    public int access()
    {
        return access;
    }

    @Override
    public ByteBuffer byteBuffer()
    {
        return byteBuffer;
    }

    @Override
    public UnsafeBuffer buffer()
    {
        return data;
    }

    @Override
    public boolean isRegistered()
    {
        return registered;
    }

    @Override
    public void close()
    {
        synchronized (this)
        {
            if (!registered)
            {
                return;
            }
            registered = false;
        }
        // Peers check this word before every access through their own mappings.
        header.putIntVolatile(STATE_OFFSET, STATE_DEREGISTERED);
        pd.shmContext().deregistered(this);
        pd.removed(this);
        ShmFiles.deleteQuietly(file);
        pd.shmContext().fileRemoved(file);
        // Unmapped now, not at some GC: thousands of closed connections must not keep their mappings
        // (vm.max_map_count) and tmpfs pages. As with ibv_dereg_mr, the memory is gone after close():
        // the owner must not touch buffer()/byteBuffer() any more (the engine closes a region only once
        // no claim, retained message or posted request can reach it). Local QPs find regions through the
        // context's table, from which this one was removed above.
        ShmFiles.unmap(mapping);
    }

    @Override
    public String toString()
    {
        return "ShmMemoryRegion{index=" + index + ", length=" + length + ", lkey=" + lkey + ", rkey=" + rkey +
            ", access=" + Access.toString(access) + ", pd=" + pd.id() + '}';
    }
}
