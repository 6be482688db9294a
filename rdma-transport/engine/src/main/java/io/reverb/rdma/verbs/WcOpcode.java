package io.reverb.rdma.verbs;

/**
 * Work completion opcode, with the values of {@code enum ibv_wc_opcode}.
 */
public enum WcOpcode
{
    /** A SEND or SEND_WITH_IMM completed on the sender. */
    SEND(0),
    /** An RDMA_WRITE or RDMA_WRITE_WITH_IMM completed on the sender. */
    RDMA_WRITE(1),
    /** An RDMA_READ completed on the reader. */
    RDMA_READ(2),
    /** A receive consumed by SEND / SEND_WITH_IMM. */
    RECV(128),
    /** A receive consumed by RDMA_WRITE_WITH_IMM (no data placed in it; imm carries the id). */
    RECV_RDMA_WITH_IMM(129);

    private final int value;

    WcOpcode(final int value)
    {
        this.value = value;
    }

    /** @return ibverbs numeric value. */
    public int value()
    {
        return value;
    }

    /**
     * @param value ibverbs numeric value.
     * @return the opcode.
     * @throws IllegalArgumentException if unknown.
     */
    public static WcOpcode fromValue(final int value)
    {
        switch (value)
        {
            case 0: return SEND;
            case 1: return RDMA_WRITE;
            case 2: return RDMA_READ;
            case 128: return RECV;
            case 129: return RECV_RDMA_WITH_IMM;
            default: throw new IllegalArgumentException("unknown ibv_wc_opcode " + value);
        }
    }
}
