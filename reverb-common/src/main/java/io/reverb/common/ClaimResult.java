package io.reverb.common;

/**
 * Result codes of a transport connection's {@code tryClaim(int, WriteClaim)} and {@link WriteClaim#commit()}: the hot path
 * returns codes, not exceptions. One set for every layer: the RDMA connection engine returns the same numbers
 * (its {@code Connection.OK}, {@code BACK_PRESSURED}, ... are these constants), so a transport passes them through.
 */
public final class ClaimResult
{
    /** Claimed (or committed). */
    public static final int OK = 0;
    /** No space now; the transport's writable callback (rpc-core: {@code ConnectionHandler.onWritable}) follows when there is. */
    public static final int BACK_PRESSURED = -1;
    /** The connection failed (the peer is gone); nothing more can be sent. The RPC layer treats it as CLOSED. */
    public static final int NOT_CONNECTED = -2;
    /** The connection is closed or closing; nothing more can be sent. */
    public static final int CLOSED = -3;
    /** Longer than the connection's largest message (rpc-core: {@code Connection.maxMessageLength()}); it will never fit. */
    public static final int TOO_LARGE = -4;

    private ClaimResult()
    {
    }

    /**
     * @param code a result code.
     * @return its name.
     */
    public static String toString(final int code)
    {
        switch (code)
        {
            case OK: return "OK";
            case BACK_PRESSURED: return "BACK_PRESSURED";
            case NOT_CONNECTED: return "NOT_CONNECTED";
            case CLOSED: return "CLOSED";
            case TOO_LARGE: return "TOO_LARGE";
            default: return "UNKNOWN(" + code + ")";
        }
    }
}
