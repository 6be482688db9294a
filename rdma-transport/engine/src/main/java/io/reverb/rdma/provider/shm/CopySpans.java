package io.reverb.rdma.provider.shm;

import io.reverb.rdma.provider.base.RegionChecks;
import io.reverb.rdma.verbs.Access;
import io.reverb.rdma.verbs.ScatterGatherList;
import org.agrona.UnsafeApi;
import org.agrona.concurrent.UnsafeBuffer;

/**
 * The send path's scratch, one per QP and reused under its send lock so that posting allocates nothing: a work
 * request's source and destination as spans of mapped memory (up to {@link ScatterGatherList#MAX_SGE} each), each
 * checked before a byte moves (local SGEs against the QP's PD, the peer's receive and one-sided accesses against the
 * peer's regions), and the copy between them. References to mapped buffers are dropped after each copy, so that a
 * deregistered region's mapping is not kept reachable from here.
 */
final class CopySpans
{
    private final ShmVerbsContext context;
    private final ShmProtectionDomain pd;
    private final PeerRegions peerRegions;
    private final UnsafeBuffer[] srcBuffers = new UnsafeBuffer[ScatterGatherList.MAX_SGE];
    private final int[] srcOffsets = new int[ScatterGatherList.MAX_SGE];
    private final int[] srcLengths = new int[ScatterGatherList.MAX_SGE];
    private int srcCount;
    private final UnsafeBuffer[] dstBuffers = new UnsafeBuffer[ScatterGatherList.MAX_SGE];
    private final int[] dstOffsets = new int[ScatterGatherList.MAX_SGE];
    private final int[] dstLengths = new int[ScatterGatherList.MAX_SGE];
    private int dstCount;

    /**
     * @param context     the QP's context (its registered regions).
     * @param pd          the QP's protection domain.
     * @param peerRegions the peer's regions as the QP maps them.
     */
    CopySpans(final ShmVerbsContext context, final ShmProtectionDomain pd, final PeerRegions peerRegions)
    {
        this.context = context;
        this.pd = pd;
        this.peerRegions = peerRegions;
    }

    /** No source: a zero-length RDMA READ. */
    void clearSource()
    {
        srcCount = 0;
    }

    /** No destination: a zero-length RDMA WRITE. */
    void clearDestination()
    {
        dstCount = 0;
    }

    /**
     * Copies the resolved source spans into {@code dst} from {@code offset} (the caller checked they fit: an inline
     * slot's data): without {@link UnsafeBuffer}'s bounds checks, as every span was checked against its region when
     * it was resolved (asserted where assertions are on).
     */
    void copySourceTo(final UnsafeBuffer dst, final int offset)
    {
        final byte[] dstArray = dst.byteArray();
        final long dstAddress = dst.addressOffset();
        int at = offset;
        for (int i = 0; i < srcCount; i++)
        {
            final UnsafeBuffer src = srcBuffers[i];
            final int length = srcLengths[i];
            assert at >= 0 && at <= dst.capacity() - length && srcOffsets[i] >= 0 &&
                srcOffsets[i] <= src.capacity() - length : "span outside its buffer";
            UnsafeApi.copyMemory(src.byteArray(), src.addressOffset() + srcOffsets[i], dstArray, dstAddress + at, length);
            at += length;
            srcBuffers[i] = null;
        }
    }

    /** Resolves the request's own SGEs against this QP's PD into the source or destination spans. */
    boolean resolveLocal(final ScatterGatherList sges, final boolean needLocalWrite, final boolean asSource)
    {
        final UnsafeBuffer[] buffers = asSource ? srcBuffers : dstBuffers;
        final int[] offsets = asSource ? srcOffsets : dstOffsets;
        final int[] lengths = asSource ? srcLengths : dstLengths;
        final int count = sges.sgeCount();
        for (int i = 0; i < count; i++)
        {
            final long address = sges.sgeAddress(i);
            final int length = sges.sgeLength(i);
            final ShmMemoryRegion region = context.region(RegionChecks.indexOfAddress(address));
            final long offset = RegionChecks.localOffset(region, pd, sges.sgeLkey(i), address, length, needLocalWrite);
            if (offset == RegionChecks.DENIED)
            {
                return false;
            }
            buffers[i] = region.buffer();
            offsets[i] = (int)offset;
            lengths[i] = length;
        }
        if (asSource)
        {
            srcCount = count;
        }
        else
        {
            dstCount = count;
        }
        return true;
    }

    /**
     * Resolves a claimed peer receive's SGEs against the peer QP's PD into the destination spans.
     *
     * @param sges     the receive, as read from the peer's queue.
     * @param peerPdId the peer QP's PD.
     */
    boolean resolvePeerReceive(final ScatterGatherList sges, final int peerPdId)
    {
        final int count = sges.sgeCount();
        for (int i = 0; i < count; i++)
        {
            final long address = sges.sgeAddress(i);
            final int length = sges.sgeLength(i);
            final RemoteRegion region = peerRegions.get(RegionChecks.indexOfAddress(address));
            if (region == null || region.lkey != sges.sgeLkey(i) || region.pdId != peerPdId ||
                (region.access & Access.LOCAL_WRITE) == 0)
            {
                return false;
            }
            final long offset = RegionChecks.offsetIn(region.baseAddress, region.length, address, length);
            if (offset == RegionChecks.DENIED)
            {
                return false;
            }
            dstBuffers[i] = region.data;
            dstOffsets[i] = (int)offset;
            dstLengths[i] = length;
        }
        dstCount = count;
        return true;
    }

    /**
     * Checks rkey, bounds, access and PD of a one-sided access to the peer's memory, and resolves it into the source
     * ({@code asSource}: an RDMA READ) or destination spans.
     */
    boolean resolveRemote(final int rkey, final long address, final int length, final int access,
        final boolean asSource, final int peerPdId)
    {
        final int index = RegionChecks.indexOfKey(rkey);
        if (index != RegionChecks.indexOfAddress(address))
        {
            return false;
        }
        final RemoteRegion region = peerRegions.get(index);
        if (region == null || region.rkey != rkey || region.pdId != peerPdId || (region.access & access) == 0)
        {
            return false;
        }
        final long offset = RegionChecks.offsetIn(region.baseAddress, region.length, address, length);
        if (offset == RegionChecks.DENIED)
        {
            return false;
        }
        if (asSource)
        {
            srcBuffers[0] = region.data;
            srcOffsets[0] = (int)offset;
            srcLengths[0] = length;
            srcCount = 1;
        }
        else
        {
            dstBuffers[0] = region.data;
            dstOffsets[0] = (int)offset;
            dstLengths[0] = length;
            dstCount = 1;
        }
        return true;
    }

    /** Copies the source spans into the destination spans (the caller checked the lengths fit). */
    void copy()
    {
        int si = 0;
        int di = 0;
        int srcOffset = srcCount > 0 ? srcOffsets[0] : 0;
        int srcRemaining = srcCount > 0 ? srcLengths[0] : 0;
        int dstOffset = dstCount > 0 ? dstOffsets[0] : 0;
        int dstRemaining = dstCount > 0 ? dstLengths[0] : 0;
        while (si < srcCount && di < dstCount)
        {
            if (srcRemaining == 0)
            {
                if (++si < srcCount)
                {
                    srcOffset = srcOffsets[si];
                    srcRemaining = srcLengths[si];
                }
                continue;
            }
            if (dstRemaining == 0)
            {
                if (++di < dstCount)
                {
                    dstOffset = dstOffsets[di];
                    dstRemaining = dstLengths[di];
                }
                continue;
            }
            final int n = Math.min(srcRemaining, dstRemaining);
            dstBuffers[di].putBytes(dstOffset, srcBuffers[si], srcOffset, n);
            srcOffset += n;
            srcRemaining -= n;
            dstOffset += n;
            dstRemaining -= n;
        }
        // Drop references so that a deregistered region's mapping is not kept reachable from here.
        for (int i = 0; i < ScatterGatherList.MAX_SGE; i++)
        {
            srcBuffers[i] = null;
            dstBuffers[i] = null;
        }
    }
}
