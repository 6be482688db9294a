package io.reverb.rdma.provider.base;

import io.reverb.rdma.verbs.Access;
import io.reverb.rdma.verbs.MemoryRegion;
import io.reverb.rdma.verbs.ProtectionDomain;

/**
 * The key, bounds, protection-domain and access checks a software provider makes before it touches
 * registered memory, written once for shm and tcp (a real HCA makes them itself), and the encoding both use
 * for addresses and keys:
 *
 * <pre>
 *   address:  | region index (32 bits) | offset in the region (32 bits) |
 *   lkey:     | region index (24 bits) | 0 | tag (7 bits) |
 *   rkey:     | region index (24 bits) | 1 | tag (7 bits) |
 * </pre>
 *
 * Indexes are never reused within a context, so a stale key or address cannot reach a newer region.
 * Every check returns an offset, or {@link #DENIED}: no exception and no allocation on the data path.
 */
public final class RegionChecks
{
    /** What the checks return when access is not permitted. */
    public static final long DENIED = -1;

    private RegionChecks()
    {
    }

    /** @return the region index encoded in an address. */
    public static int indexOfAddress(final long address)
    {
        return (int)(address >>> 32);
    }

    /** @return the region index encoded in a key. */
    public static int indexOfKey(final int key)
    {
        return key >>> 8;
    }

    /** @return the address of offset 0 of the region with this index. */
    public static long baseAddress(final int index)
    {
        return ((long)index) << 32;
    }

    /** @return the local key of the region with this index and random tag. */
    public static int localKey(final int index, final int tag)
    {
        return (index << 8) | (tag & 0x7F);
    }

    /** @return the remote key of the region with this index and random tag. */
    public static int remoteKey(final int index, final int tag)
    {
        return (index << 8) | 0x80 | (tag & 0x7F);
    }

    /**
     * @return the offset of {@code [address, address + bytes)} in {@code [base, base + regionLength)}, or
     * {@link #DENIED} if it does not fit
     */
    public static long offsetIn(final long base, final long regionLength, final long address, final long bytes)
    {
        final long offset = address - base;
        return offset < 0 || bytes < 0 || offset + bytes > regionLength ? DENIED : offset;
    }

    /**
     * Checks one SGE of a work request posted to a QP of {@code pd}.
     *
     * @param region         the region the SGE's address names, or null if there is none
     * @param pd             the QP's protection domain
     * @param lkey           the SGE's local key
     * @param address        the SGE's address
     * @param length         the SGE's length
     * @param needLocalWrite whether the operation writes into the SGE (a receive, an RDMA READ)
     * @return the offset in the region, or {@link #DENIED}
     */
    public static long localOffset(
        final MemoryRegion region,
        final ProtectionDomain pd,
        final int lkey,
        final long address,
        final int length,
        final boolean needLocalWrite)
    {
        if (region == null || region.lkey() != lkey || !region.isRegistered() || region.pd() != pd ||
            (needLocalWrite && (region.access() & Access.LOCAL_WRITE) == 0))
        {
            return DENIED;
        }
        return offsetIn(region.address(), region.length(), address, length);
    }

    /**
     * Checks a one-sided access by the peer of a QP of {@code pd} to this side's memory.
     *
     * @param region  the region the key names, or null if there is none
     * @param pd      the QP's protection domain
     * @param rkey    the remote key the peer sent
     * @param address the address the peer sent (it must name the same region as the key)
     * @param length  how many bytes the peer reads or writes
     * @param access  {@link Access#REMOTE_READ} or {@link Access#REMOTE_WRITE}
     * @return the offset in the region, or {@link #DENIED}
     */
    public static long remoteOffset(
        final MemoryRegion region,
        final ProtectionDomain pd,
        final int rkey,
        final long address,
        final long length,
        final int access)
    {
        if (region == null || indexOfKey(rkey) != indexOfAddress(address) || region.rkey() != rkey ||
            !region.isRegistered() || region.pd() != pd || (region.access() & access) == 0)
        {
            return DENIED;
        }
        return offsetIn(region.address(), region.length(), address, length);
    }
}
