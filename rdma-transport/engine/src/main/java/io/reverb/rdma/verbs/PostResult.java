package io.reverb.rdma.verbs;

/**
 * Return codes of {@link QueuePair#postSend(SendRequest)} and {@link QueuePair#postRecv(RecvRequest)}.
 * As with ibv_post_send, a request that was accepted reports its failures later, as a completion;
 * these codes are for requests refused at once.
 */
public final class PostResult
{
    /** Accepted. */
    public static final int OK = 0;
    /** The work queue is full (ENOMEM): too many outstanding requests. */
    public static final int QUEUE_FULL = -1;
    /** Malformed request (EINVAL): too many SGEs, opcode not allowed, negative length. */
    public static final int INVALID = -2;
    /** The QP has been destroyed. Requests posted to a QP in ERROR are accepted and flushed instead. */
    public static final int CLOSED = -3;

    private PostResult()
    {
    }

    /** @param code a result. @return its name. */
    public static String toString(final int code)
    {
        switch (code)
        {
            case OK: return "OK";
            case QUEUE_FULL: return "QUEUE_FULL";
            case INVALID: return "INVALID";
            case CLOSED: return "CLOSED";
            default: return "UNKNOWN(" + code + ")";
        }
    }
}
