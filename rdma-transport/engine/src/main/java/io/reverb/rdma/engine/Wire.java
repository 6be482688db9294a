package io.reverb.rdma.engine;

/**
 * Sizes, types and layout rules of what the engine puts on the wire. Everything is little-endian and
 * 8-byte aligned; the fields are read and written through {@link BatchHeaderFlyweight},
 * {@link ControlFrameFlyweight} and {@link DataFrameFlyweight}, whose javadoc draws each layout.
 *
 * <p>Every SEND carries one <em>batch</em>: a batch header, zero or more fixed-size control frames,
 * then zero or more data frames taken as one contiguous range of the send ring (coalescing).
 * <pre>
 *  +---------------------------------------------------------------+
 *  |  batch header (16 bytes)                                      |
 *  +---------------------------------------------------------------+
 *  |  control frames: CONTROL_FRAME_LENGTH bytes each              |
 *  +---------------------------------------------------------------+
 *  |  data frames, each: length | type | message id (64) | payload |
 *  |  (every data frame starts and ends on a 16-byte boundary)     |
 *  +---------------------------------------------------------------+
 * </pre>
 * A data frame of type {@link #FRAME_RTS} has no payload: its length field is the length of the
 * rendezvous message it announces and its message id is the rendezvous id (the immediate of the
 * RDMA_WRITE_WITH_IMM that later delivers it).
 */
final class Wire
{
    static final int BATCH_HEADER_LENGTH = BatchHeaderFlyweight.LENGTH;

    static final int CONTROL_FRAME_LENGTH = ControlFrameFlyweight.LENGTH;
    /** Control frames carried by one batch at most; the rest wait for the next SEND. */
    static final int MAX_CONTROL_FRAMES_PER_BATCH = 4;
    static final int MAX_CONTROL_SECTION = MAX_CONTROL_FRAMES_PER_BATCH * CONTROL_FRAME_LENGTH;
    /** One control slot of the sender: the batch header plus the control section. */
    static final int CONTROL_SLOT_LENGTH = BATCH_HEADER_LENGTH + MAX_CONTROL_SECTION;

    /** Clear to send: the receiver granted a buffer (address, rkey, length) for rendezvous id. */
    static final int CONTROL_CTS = 1;
    /** The receiver refused rendezvous id; code says why, length carries its limit. */
    static final int CONTROL_REFUSE = 2;
    /** The sender has nothing more to send: graceful close. */
    static final int CONTROL_CLOSE = 3;
    /**
     * The connector's proof of its token (see {@code Handshake}): the first control frame of its first batch
     * when authenticating; the 16 proof bytes fill the id and address fields.
     */
    static final int CONTROL_AUTH = 4;
    /**
     * The sender gives up rendezvous id after its CTS, without writing it (a direct write whose claim was aborted or
     * never taken): the receiver returns the granted buffer and delivers nothing for it.
     */
    static final int CONTROL_ABORT = 5;

    /**
     * CLOSE's code: this CLOSE answers the peer's (sent after receiving it), so its sender disconnects; 0: sent
     * first (or the two crossed: then the acceptor disconnects). A peer that predates it sends 0.
     */
    static final int CLOSE_ANSWER = 1;

    /** REFUSE: longer than the receiver's inbound limit (length: that limit). */
    static final int REFUSE_TOO_LARGE = 1;
    /** REFUSE: its buffer can never fit the receiver's rendezvous memory budget (length: the budget, capped). */
    static final int REFUSE_OVER_BUDGET = 2;
    /** REFUSE: the receiver could not register the memory (length: the buffer size it tried). */
    static final int REFUSE_NO_MEMORY = 3;

    static final int FRAME_HEADER_LENGTH = DataFrameFlyweight.HEADER_LENGTH;

    /* A claimed frame not yet committed carries the negated type: the flusher stops there. */
    static final int FRAME_DATA = 1;
    static final int FRAME_RTS = 2;
    /** Aborted claim or the filler before the ring wraps: never sent; its length field is its whole size. */
    static final int FRAME_PAD = 3;

    private Wire()
    {
    }

    static int align8(final int value)
    {
        return (value + 7) & ~7;
    }

    /** Data frames are 16-byte aligned so that a padding frame always fits before the ring wraps. */
    static int align16(final int value)
    {
        return (value + 15) & ~15;
    }

    /** @return bytes a data frame of the given payload occupies in the ring and in a batch. */
    static int dataFrameLength(final int payloadLength)
    {
        return align16(FRAME_HEADER_LENGTH + payloadLength);
    }

    /** @return bytes a ring frame of this type (committed or claimed) and length field occupies. */
    static int frameSize(final int type, final int length)
    {
        switch (type)
        {
            case FRAME_DATA:
            case -FRAME_DATA:
                return dataFrameLength(length);
            case FRAME_RTS:
            case -FRAME_RTS:
                return FRAME_HEADER_LENGTH;
            default:
                return length; // PAD: its whole size
        }
    }

    /**
     * @param eagerLimit largest eager payload.
     * @return bytes of one receive slot: batch header, a full control section and one maximal frame.
     */
    static int receiveSlotLength(final int eagerLimit)
    {
        return BATCH_HEADER_LENGTH + MAX_CONTROL_SECTION + dataFrameLength(eagerLimit);
    }
}
