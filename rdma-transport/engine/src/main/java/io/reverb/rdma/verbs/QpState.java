package io.reverb.rdma.verbs;

/**
 * Queue-pair states, as {@code enum ibv_qp_state}.
 */
public enum QpState
{
    /** Just created. */
    RESET(0),
    /** Initialised; receives may be posted. */
    INIT(1),
    /** Ready to receive. */
    RTR(2),
    /** Ready to send: connected. */
    RTS(3),
    /** Send queue drained. */
    SQD(4),
    /** Send queue error. */
    SQE(5),
    /** Error: every outstanding and new work request completes with WR_FLUSH_ERR. */
    ERROR(6);

    private final int value;

    QpState(final int value)
    {
        this.value = value;
    }

    /** @return ibverbs numeric value. */
    public int value()
    {
        return value;
    }
}
