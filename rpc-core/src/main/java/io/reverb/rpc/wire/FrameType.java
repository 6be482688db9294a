package io.reverb.rpc.wire;

/**
 * Frame types with their wire value and the flags each may carry. Layouts after the common header
 * ({@link FrameHeaderFlyweight}), all little-endian:
 *
 * <pre>
 * CALL        client -> server, opens stream id (odd ids are not required; ids increase per connection)
 *   +---------------------------------------------------------------+
 *   |                   Timeout nanos (int64, -1 = none)            |
 *   |                                                               |
 *   +---------------------------------------------------------------+
 *   |        Initial response demand (int32, MAX_VALUE = unbounded) |
 *   +-------------------------------+-------------------------------+
 *   |  Method name length (uint16)  |  Method name (ASCII) ...      |
 *   +-------------------------------+-------------------------------+
 *   |  Metadata block ...                                           |
 *
 * MESSAGE     either way: the marshalled message fills the rest of the frame. Flag END_STREAM: last message.
 *             Flag COMPRESSED: the body is the codec's name, then the message compressed with it:
 *   | Codec name length (uint8, 1..255) | Codec name (ASCII) ... | Compressed message ...            |
 *             (only between peers that negotiated it: engine protocol v3 and later, inproc://)
 * HALF_CLOSE  client -> server: no more messages (when the last one was not flagged END_STREAM). Empty.
 * REQUEST_N   either way: demand for n more messages
 *   |                 n (int32, MAX_VALUE = unbounded)              |
 * CANCEL      client -> server: the client gave up on the call; the reason lets the server end its side alike
 *   |       Reason status code (int32, e.g. CANCELLED, DEADLINE_EXCEEDED) |
 * HEADERS     server -> client: response initial metadata, before the first MESSAGE. Metadata block.
 * STATUS      server -> client: ends the call. Flag REFUSED: no handler ran (refused before dispatch)
 *   |                     Status code (int32)                       |
 *   |              Description length (int32, -1 = none)            |
 *   |  Description (UTF-8) ...     |  Metadata block (trailers) ...  |
 * PING        either way, stream 0. Flag ACK on the answer, which echoes the payload
 *   |                        Payload (int64)                        |
 * GOAWAY      either way, stream 0: no new calls; calls above the last stream id were not processed
 *   |                    Last stream id (int32)                     |
 *   |                     Status code (int32)                       |
 *   |              Description length (int32, -1 = none)            |
 *   |  Description (UTF-8) ...                                      |
 *
 * Metadata block:
 *   | Entry count (uint16) | per entry: name length (uint16), name (ASCII), value length (int32), value |
 * </pre>
 */
public enum FrameType
{
    /** Opens a call. */
    CALL(1, 0),
    /** One message. */
    MESSAGE(2, Flags.END_STREAM | Flags.COMPRESSED),
    /** Client finished sending. */
    HALF_CLOSE(3, 0),
    /** Demand. */
    REQUEST_N(4, 0),
    /** Client cancels. */
    CANCEL(5, 0),
    /** Response headers. */
    HEADERS(6, 0),
    /** Ends a call. Flag REFUSED: no handler ran, the client may retry the call elsewhere. */
    STATUS(7, Flags.REFUSED),
    /** Keep-alive. */
    PING(8, Flags.ACK),
    /** Connection shutdown. */
    GOAWAY(9, 0);

    /**
     * Flag bits.
     */
    public static final class Flags
    {
        /** MESSAGE: last message of this side. */
        public static final int END_STREAM = 0x1;
        /**
         * MESSAGE: the body is a codec name and the message compressed with that codec (see the layout above). A peer
         * that predates it refuses the frame as a protocol error, so the transports negotiate it first (the engine's
         * handshake refuses a peer of protocol v2 or older).
         */
        public static final int COMPRESSED = 0x2;
        /** PING: an answer. */
        public static final int ACK = 0x1;
        /**
         * STATUS: the server refused the call before any handler saw it (its per-connection call limit, or it is
         * shutting down), so the client may retry it on another replica even when it is not idempotent.
         */
        public static final int REFUSED = 0x1;

        private Flags()
        {
        }
    }

    private static final FrameType[] BY_VALUE = new FrameType[16];

    static
    {
        for (final FrameType type : values())
        {
            BY_VALUE[type.value] = type;
        }
    }

    private final int value;
    private final int allowedFlags;

    FrameType(final int value, final int allowedFlags)
    {
        this.value = value;
        this.allowedFlags = allowedFlags;
    }

    /**
     * @return the wire value.
     */
    public int value()
    {
        return value;
    }

    /**
     * @return the flag bits this type may carry.
     */
    public int allowedFlags()
    {
        return allowedFlags;
    }

    /**
     * @param value a wire value.
     * @return the type, or null if unknown.
     */
    public static FrameType fromValue(final int value)
    {
        return value >= 0 && value < BY_VALUE.length ? BY_VALUE[value] : null;
    }
}
