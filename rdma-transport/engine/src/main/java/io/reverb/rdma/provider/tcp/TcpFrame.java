package io.reverb.rdma.provider.tcp;

import java.nio.ByteOrder;
import org.agrona.concurrent.UnsafeBuffer;

/**
 * The frame header the NIC threads exchange once a connection is up; every frame is this header,
 * followed by {@code length} payload bytes for SEND, WRITE and READ_RESPONSE. Big-endian.
 *
 * <pre>
 *  0    1    2         4             8             12            16                          24
 *  +----+----+---------+-------------+-------------+-------------+---------------------------+
 *  |type|flag| acks    | length      | imm/status  | rkey        | remote address            |
 *  +----+----+---------+-------------+-------------+-------------+---------------------------+
 * </pre>
 *
 * Requests (SEND, SEND_IMM, WRITE, WRITE_IMM, READ_REQUEST) flow from a QP's send queue to the
 * peer; the peer answers every request, in order, with exactly one response: ACK (several
 * consecutive ACKs merge into one, {@code length} counting them), NAK (with a {@code WcStatus}
 * value; the connection then ends) or READ_RESPONSE (for READ_REQUEST, {@code length} bytes of data).
 *
 * <p>ACKs also ride on requests: {@code acks} (unsigned 16 bits) of a request frame counts ACKs for the
 * peer's oldest unanswered requests, answered before the request itself is acted on, so that a request
 * going the other way carries them instead of an ACK frame of its own. Answer frames carry none (0).
 */
final class TcpFrame
{
    static final int HEADER_LENGTH = 24;

    static final int TYPE_OFFSET = 0;
    static final int FLAGS_OFFSET = 1;
    static final int ACKS_OFFSET = 2;
    static final int LENGTH_OFFSET = 4;
    static final int IMM_OFFSET = 8;
    static final int RKEY_OFFSET = 12;
    static final int ADDRESS_OFFSET = 16;

    static final int SEND = 1;
    static final int SEND_IMM = 2;
    static final int WRITE = 3;
    static final int WRITE_IMM = 4;
    static final int READ_REQUEST = 5;
    static final int ACK = 16;
    static final int NAK = 17;
    static final int READ_RESPONSE = 18;

    /** The most ACKs one request frame carries. */
    static final int MAX_PIGGYBACK_ACKS = 0xFFFF;

    /** Flag: the request was posted with IBV_SEND_SOLICITED. */
    static final int FLAG_SOLICITED = 1;

    private static final ByteOrder ORDER = ByteOrder.BIG_ENDIAN;

    private TcpFrame()
    {
    }

    static void write(
        final UnsafeBuffer buffer,
        final int offset,
        final int type,
        final int flags,
        final int acks,
        final int length,
        final int imm,
        final int rkey,
        final long address)
    {
        buffer.putByte(offset + TYPE_OFFSET, (byte)type);
        buffer.putByte(offset + FLAGS_OFFSET, (byte)flags);
        buffer.putShort(offset + ACKS_OFFSET, (short)acks, ORDER);
        buffer.putInt(offset + LENGTH_OFFSET, length, ORDER);
        buffer.putInt(offset + IMM_OFFSET, imm, ORDER);
        buffer.putInt(offset + RKEY_OFFSET, rkey, ORDER);
        buffer.putLong(offset + ADDRESS_OFFSET, address, ORDER);
    }

    static int type(final UnsafeBuffer buffer, final int offset)
    {
        return buffer.getByte(offset + TYPE_OFFSET) & 0xFF;
    }

    static int flags(final UnsafeBuffer buffer, final int offset)
    {
        return buffer.getByte(offset + FLAGS_OFFSET) & 0xFF;
    }

    static int acks(final UnsafeBuffer buffer, final int offset)
    {
        return buffer.getShort(offset + ACKS_OFFSET, ORDER) & 0xFFFF;
    }

    static int length(final UnsafeBuffer buffer, final int offset)
    {
        return buffer.getInt(offset + LENGTH_OFFSET, ORDER);
    }

    static int imm(final UnsafeBuffer buffer, final int offset)
    {
        return buffer.getInt(offset + IMM_OFFSET, ORDER);
    }

    static int rkey(final UnsafeBuffer buffer, final int offset)
    {
        return buffer.getInt(offset + RKEY_OFFSET, ORDER);
    }

    static long address(final UnsafeBuffer buffer, final int offset)
    {
        return buffer.getLong(offset + ADDRESS_OFFSET, ORDER);
    }
}
