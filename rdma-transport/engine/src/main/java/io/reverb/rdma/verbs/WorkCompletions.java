package io.reverb.rdma.verbs;

/**
 * A batch of ibv_wc entries as parallel primitive arrays: the reusable target of
 * {@link CompletionQueue#poll(WorkCompletions)}. Providers fill it with {@link #set}; consumers
 * read entries {@code 0 .. count()-1}.
 */
public final class WorkCompletions
{
    /** IBV_WC_WITH_IMM: {@link #immData(int)} is valid. */
    public static final int WC_WITH_IMM = 2;

    private final long[] wrIds;
    private final WcStatus[] statuses;
    private final WcOpcode[] opcodes;
    private final int[] byteLens;
    private final int[] immDatas;
    private final int[] wcFlags;
    private final int[] qpNums;
    private int count;

    /**
     * @param capacity maximum entries per poll (&gt; 0).
     */
    public WorkCompletions(final int capacity)
    {
        if (capacity <= 0)
        {
            throw new IllegalArgumentException("capacity must be > 0: " + capacity);
        }
        wrIds = new long[capacity];
        statuses = new WcStatus[capacity];
        opcodes = new WcOpcode[capacity];
        byteLens = new int[capacity];
        immDatas = new int[capacity];
        wcFlags = new int[capacity];
        qpNums = new int[capacity];
    }

    /** @return maximum entries. */
    public int capacity()
    {
        return wrIds.length;
    }

    /** @return entries filled by the last poll. */
    public int count()
    {
        return count;
    }

    /** @param count entries filled (providers only). */
    public void count(final int count)
    {
        this.count = count;
    }

    /**
     * Fills entry {@code i} (providers only).
     *
     * @param i       index.
     * @param wrId    id of the work request.
     * @param status  status.
     * @param opcode  opcode.
     * @param byteLen bytes received (receives) or transferred.
     * @param immData immediate in host order, if {@code flags} has {@link #WC_WITH_IMM}.
     * @param flags   {@code WC_*} flags.
     * @param qpNum   local QP number.
     */
    public void set(
        final int i,
        final long wrId,
        final WcStatus status,
        final WcOpcode opcode,
        final int byteLen,
        final int immData,
        final int flags,
        final int qpNum)
    {
        wrIds[i] = wrId;
        statuses[i] = status;
        opcodes[i] = opcode;
        byteLens[i] = byteLen;
        immDatas[i] = immData;
        wcFlags[i] = flags;
        qpNums[i] = qpNum;
    }

    /** @param i index. @return work request id. */
    public long wrId(final int i)
    {
        return wrIds[i];
    }

    /** @param i index. @return status. */
    public WcStatus status(final int i)
    {
        return statuses[i];
    }

    /** @param i index. @return opcode (undefined by ibverbs when status is not SUCCESS). */
    public WcOpcode opcode(final int i)
    {
        return opcodes[i];
    }

    /** @param i index. @return bytes. */
    public int byteLen(final int i)
    {
        return byteLens[i];
    }

    /** @param i index. @return immediate (host order). */
    public int immData(final int i)
    {
        return immDatas[i];
    }

    /** @param i index. @return true when the entry carries an immediate. */
    public boolean hasImm(final int i)
    {
        return (wcFlags[i] & WC_WITH_IMM) != 0;
    }

    /** @param i index. @return {@code WC_*} flags. */
    public int wcFlags(final int i)
    {
        return wcFlags[i];
    }

    /** @param i index. @return local QP number. */
    public int qpNum(final int i)
    {
        return qpNums[i];
    }
}
