package io.reverb.rdma.provider.shm;

import io.reverb.rdma.provider.base.AbstractMemoryRegion;
import io.reverb.rdma.provider.base.RegionChecks;
import io.reverb.rdma.verbs.Access;
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
final class ShmMemoryRegion extends AbstractMemoryRegion<ShmProtectionDomain>
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

    private final int index;
    private final Path file;
    private final MappedByteBuffer mapping;
    private final UnsafeBuffer header;
    private final ByteBuffer byteBuffer;

    ShmMemoryRegion(
        final ShmProtectionDomain pd,
        final int index,
        final int tag,
        final int access,
        final int length,
        final Path file,
        final MappedByteBuffer mapping)
    {
        super(pd, RegionChecks.baseAddress(index), RegionChecks.localKey(index, tag), RegionChecks.remoteKey(index, tag),
            access, length, new UnsafeBuffer(mapping, DATA_OFFSET, length));
        this.index = index;
        this.file = file;
        this.mapping = mapping;
        this.header = new UnsafeBuffer(mapping, 0, DATA_OFFSET);
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

    int index()
    {
        return index;
    }

    Path file()
    {
        return file;
    }

    @Override
    public ByteBuffer byteBuffer()
    {
        return byteBuffer;
    }

    @Override
    public void close()
    {
        if (!markDeregistered())
        {
            return;
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
