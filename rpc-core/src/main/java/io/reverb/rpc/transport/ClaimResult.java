package io.reverb.rpc.transport;

/**
 * Result codes of {@link Connection#tryClaim(int, WriteClaim)} and {@link WriteClaim#commit()}: the hot path
 * returns codes, not exceptions.
 */
public final class ClaimResult
{
    /** Claimed (or committed). */
    public static final int OK = 0;
    /** No space now; {@link ConnectionHandler#onWritable(Connection)} follows when there is. */
    public static final int BACK_PRESSURED = -1;
    /** The connection is closed or closing; nothing more can be sent. */
    public static final int CLOSED = -2;
    /** Longer than {@link Connection#maxMessageLength()}; it will never fit. */
    public static final int TOO_LARGE = -3;

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
            case CLOSED: return "CLOSED";
            case TOO_LARGE: return "TOO_LARGE";
            default: return "UNKNOWN(" + code + ")";
        }
    }
}
