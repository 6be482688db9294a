package io.reverb.rdma.engine;

import org.agrona.concurrent.UnsafeBuffer;

/**
 * A control frame: CTS, REFUSE or CLOSE ({@link Wire#CONTROL_CTS} ...). Fixed size, little-endian.
 * <pre>
 *   0                   1                   2                   3
 *   0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
 *  +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 *  |                          type                                 |  0
 *  +---------------------------------------------------------------+
 *  |                          code (REFUSE: why)                   |  4
 *  +---------------------------------------------------------------+
 *  |                    rendezvous id (64 bits)                    |  8
 *  |                                                               |
 *  +---------------------------------------------------------------+
 *  |              remote address of the granted buffer (64 bits)   |  16
 *  |                                                               |
 *  +---------------------------------------------------------------+
 *  |                          rkey                                 |  24
 *  +---------------------------------------------------------------+
 *  |       length (CTS: bytes granted, REFUSE: the receiver's limit)  |  28
 *  +---------------------------------------------------------------+
 * </pre>
 */
final class ControlFrameFlyweight
{
    static final int TYPE_OFFSET = 0;
    static final int CODE_OFFSET = 4;
    static final int ID_OFFSET = 8;
    static final int ADDRESS_OFFSET = 16;
    static final int RKEY_OFFSET = 24;
    static final int LENGTH_OFFSET = 28;
    static final int LENGTH = 32;

    private UnsafeBuffer buffer;
    private int offset;

    ControlFrameFlyweight wrap(final UnsafeBuffer buffer, final int offset)
    {
        this.buffer = buffer;
        this.offset = offset;
        return this;
    }

    int type()
    {
        return buffer.getInt(offset + TYPE_OFFSET);
    }

    ControlFrameFlyweight type(final int type)
    {
        buffer.putInt(offset + TYPE_OFFSET, type);
        return this;
    }

    int code()
    {
        return buffer.getInt(offset + CODE_OFFSET);
    }

    ControlFrameFlyweight code(final int code)
    {
        buffer.putInt(offset + CODE_OFFSET, code);
        return this;
    }

    long id()
    {
        return buffer.getLong(offset + ID_OFFSET);
    }

    ControlFrameFlyweight id(final long id)
    {
        buffer.putLong(offset + ID_OFFSET, id);
        return this;
    }

    long address()
    {
        return buffer.getLong(offset + ADDRESS_OFFSET);
    }

    ControlFrameFlyweight address(final long address)
    {
        buffer.putLong(offset + ADDRESS_OFFSET, address);
        return this;
    }

    int rkey()
    {
        return buffer.getInt(offset + RKEY_OFFSET);
    }

    ControlFrameFlyweight rkey(final int rkey)
    {
        buffer.putInt(offset + RKEY_OFFSET, rkey);
        return this;
    }

    int length()
    {
        return buffer.getInt(offset + LENGTH_OFFSET);
    }

    ControlFrameFlyweight length(final int length)
    {
        buffer.putInt(offset + LENGTH_OFFSET, length);
        return this;
    }
}
