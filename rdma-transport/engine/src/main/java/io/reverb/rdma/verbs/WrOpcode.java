package io.reverb.rdma.verbs;

/**
 * Send work request opcode, with the values of {@code enum ibv_wr_opcode}.
 */
public enum WrOpcode
{
    /** One-sided write into the peer's registered memory. */
    RDMA_WRITE(0),
    /** One-sided write that also consumes a peer receive and delivers a 32-bit immediate. */
    RDMA_WRITE_WITH_IMM(1),
    /** Two-sided send into the peer's next posted receive. */
    SEND(2),
    /** SEND carrying a 32-bit immediate. */
    SEND_WITH_IMM(3),
    /** One-sided read from the peer's registered memory. */
    RDMA_READ(4);

    private final int value;

    WrOpcode(final int value)
    {
        this.value = value;
    }

    /** @return ibverbs numeric value. */
    public int value()
    {
        return value;
    }

    /** @return the opcode the sender's completion carries. */
    public WcOpcode completionOpcode()
    {
        switch (this)
        {
            case RDMA_WRITE:
            case RDMA_WRITE_WITH_IMM:
                return WcOpcode.RDMA_WRITE;
            case RDMA_READ:
                return WcOpcode.RDMA_READ;
            default:
                return WcOpcode.SEND;
        }
    }

    /** @return true for the opcodes that consume a receive at the peer. */
    public boolean consumesReceive()
    {
        return this == SEND || this == SEND_WITH_IMM || this == RDMA_WRITE_WITH_IMM;
    }

    /** @return true for the opcodes that carry an immediate. */
    public boolean hasImmediate()
    {
        return this == SEND_WITH_IMM || this == RDMA_WRITE_WITH_IMM;
    }
}
