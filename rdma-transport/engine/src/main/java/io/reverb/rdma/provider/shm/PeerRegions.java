package io.reverb.rdma.provider.shm;

import java.io.IOException;
import java.nio.MappedByteBuffer;
import org.agrona.collections.Int2ObjectHashMap;

/**
 * The peer's registered regions as one QP maps them into this process: mapped on first use (an RDMA operation, a
 * claimed receive's buffer, a direct write's view), forgotten once the peer deregistered one, and unmapped then, or
 * when the last view of it handed out by {@link ShmQueuePair#mapRemote} closes (a write through an unmapped view would
 * crash the JVM). Not thread-safe: the QP's send lock guards it.
 */
final class PeerRegions
{
    private final ShmVerbsContext context;
    private final Int2ObjectHashMap<RemoteRegion> regions = new Int2ObjectHashMap<>();
    private String peerPrefix;
    private int mappingsOpen;

    /** @param context the QP's context (where the peer's region files are). */
    PeerRegions(final ShmVerbsContext context)
    {
        this.context = context;
    }

    /** @param prefix the peer's file prefix, known once the QP attaches to its peer. */
    void peer(final String prefix)
    {
        this.peerPrefix = prefix;
    }

    /**
     * @param index the region's index (from an address or a key the peer sent: checked by the caller against the
     *              region's own key, PD, access and bounds).
     * @return the peer's registered region with this index, mapped on first use (cold path), or null if it does not
     * exist or is no longer registered.
     */
    RemoteRegion get(final int index)
    {
        RemoteRegion region = regions.get(index);
        if (region != null)
        {
            if (region.isRegistered())
            {
                return region;
            }
            // Indexes are never reused, so a deregistered region is gone for good: drop our mapping.
            regions.remove(index);
            drop(region);
            return null;
        }
        if (index <= 0 || peerPrefix == null)
        {
            return null;
        }
        try
        {
            final MappedByteBuffer mapping = ShmFiles.mapExisting(context.peerFile(peerPrefix + "-mr" + index));
            if (mapping == null)
            {
                return null;
            }
            region = RemoteRegion.of(mapping, index);
            if (region == null)
            {
                ShmFiles.unmap(mapping);
                return null;
            }
            regions.put(index, region);
            return region;
        }
        catch (final IOException ex)
        {
            return null;
        }
    }

    /** A view of {@code region} was handed out: its mapping stays until the view closes. */
    void pin(final RemoteRegion region)
    {
        region.pins++;
        mappingsOpen++;
    }

    /** A view was closed: the last one of a dropped region unmaps it. */
    void unpin(final RemoteRegion region)
    {
        mappingsOpen--;
        if (--region.pins == 0 && region.dropped)
        {
            ShmFiles.unmap(region.mapping);
        }
    }

    /** @return views handed out and not yet closed. */
    int mappingsOpen()
    {
        return mappingsOpen;
    }

    /** The QP closed: every mapping is dropped (unmapped now, or by its last view's close). */
    void dropAll()
    {
        regions.forEach((index, region) -> drop(region));
        regions.clear();
    }

    /** Forgets a mapping: unmapped now, or by its last view's close. */
    private void drop(final RemoteRegion region)
    {
        if (region.pins > 0)
        {
            region.dropped = true;
        }
        else
        {
            ShmFiles.unmap(region.mapping);
        }
    }
}
