package io.reverb.rdma.verbs;

/**
 * Up to {@link #MAX_SGE} scatter-gather entries (ibv_sge: addr, length, lkey), held in primitive
 * arrays so that reusing a request allocates nothing.
 */
public class ScatterGatherList
{
    /** Entries every provider supports. */
    public static final int MAX_SGE = 4;

    private final long[] addresses = new long[MAX_SGE];
    private final int[] lengths = new int[MAX_SGE];
    private final int[] lkeys = new int[MAX_SGE];
    private int count;

    /**
     * Replaces the list with one entry.
     *
     * @param address start address inside a region of this QP's PD.
     * @param length  bytes.
     * @param lkey    the region's local key.
     */
    public void setSge(final long address, final int length, final int lkey)
    {
        count = 0;
        addSge(address, length, lkey);
    }

    /**
     * Appends one entry.
     *
     * @param address start address inside a region of this QP's PD.
     * @param length  bytes.
     * @param lkey    the region's local key.
     * @throws IllegalStateException if {@link #MAX_SGE} entries are already present.
     */
    public void addSge(final long address, final int length, final int lkey)
    {
        if (count == MAX_SGE)
        {
            throw new IllegalStateException("at most " + MAX_SGE + " SGEs");
        }
        if (length < 0)
        {
            throw new IllegalArgumentException("negative SGE length " + length);
        }
        addresses[count] = address;
        lengths[count] = length;
        lkeys[count] = lkey;
        count++;
    }

    /**
     * Convenience: an entry covering {@code region[offset, offset + length)}.
     *
     * @param region registered memory.
     * @param offset offset in the region.
     * @param length bytes.
     */
    public void setSge(final MemoryRegion region, final int offset, final int length)
    {
        setSge(region.address() + offset, length, region.lkey());
    }

    /** Removes every entry. */
    public void clearSge()
    {
        count = 0;
    }

    /** @return number of entries. */
    public int sgeCount()
    {
        return count;
    }

    /** @param i index. @return its address. */
    public long sgeAddress(final int i)
    {
        return addresses[i];
    }

    /** @param i index. @return its length. */
    public int sgeLength(final int i)
    {
        return lengths[i];
    }

    /** @param i index. @return its lkey. */
    public int sgeLkey(final int i)
    {
        return lkeys[i];
    }

    /** @return sum of entry lengths. */
    public long totalLength()
    {
        long total = 0;
        for (int i = 0; i < count; i++)
        {
            total += lengths[i];
        }
        return total;
    }
}
