package io.reverb.rdma.verbs;

/**
 * Work completion status, with the values of {@code enum ibv_wc_status}.
 */
public enum WcStatus
{
    /** Completed. */
    SUCCESS(0),
    /** Local length error: the message is larger than the posted receive, or an SGE is out of bounds. */
    LOC_LEN_ERR(1),
    /** Local QP operation error. */
    LOC_QP_OP_ERR(2),
    /** Local EE context operation error. */
    LOC_EEC_OP_ERR(3),
    /** Local protection error: an SGE's lkey is invalid or lacks access. */
    LOC_PROT_ERR(4),
    /** Flushed: the QP was in (or moved to) ERROR. */
    WR_FLUSH_ERR(5),
    /** Memory window bind error. */
    MW_BIND_ERR(6),
    /** Bad response. */
    BAD_RESP_ERR(7),
    /** Local access error. */
    LOC_ACCESS_ERR(8),
    /** Remote invalid request (unsupported opcode, message too long for remote receive). */
    REM_INV_REQ_ERR(9),
    /** Remote access error: bad rkey, out of bounds, or access not permitted. Target memory untouched. */
    REM_ACCESS_ERR(10),
    /** Remote operation error. */
    REM_OP_ERR(11),
    /** Transport retry counter exceeded (peer unreachable). */
    RETRY_EXC_ERR(12),
    /** Receiver-not-ready retry exceeded: the peer had no receive posted. */
    RNR_RETRY_EXC_ERR(13),
    /** Local RDD violation. */
    LOC_RDD_VIOL_ERR(14),
    /** Remote invalid RD request. */
    REM_INV_RD_REQ_ERR(15),
    /** Remote aborted. */
    REM_ABORT_ERR(16),
    /** Invalid EE context number. */
    INV_EECN_ERR(17),
    /** Invalid EE context state. */
    INV_EEC_STATE_ERR(18),
    /** Fatal error. */
    FATAL_ERR(19),
    /** Response timeout. */
    RESP_TIMEOUT_ERR(20),
    /** General error. */
    GENERAL_ERR(21);

    private static final WcStatus[] BY_VALUE = values();

    private final int value;

    WcStatus(final int value)
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
     * @return the status; GENERAL_ERR for unknown values.
     */
    public static WcStatus fromValue(final int value)
    {
        return value >= 0 && value < BY_VALUE.length ? BY_VALUE[value] : GENERAL_ERR;
    }
}
