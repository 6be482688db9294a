package io.reverb.rdma.provider.tcp;

import io.reverb.rdma.verbs.VerbsContext;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.ByteBuffer;

/**
 * Connection management messages, exchanged with blocking reads and writes before a socket is
 * handed to the NIC thread (cold path: allocation is fine here).
 *
 * <pre>
 *  0        4    5    6         8             12                        20
 *  +--------+----+----+---------+-------------+-------------------------+--------------------+
 *  | magic  |ver |type| pd len  | max send WR | RNR retry time (ns)     | private data ...   |
 *  +--------+----+----+---------+-------------+-------------------------+--------------------+
 * </pre>
 *
 * The connector sends CONNECT, the acceptor answers ACCEPT or REJECT. Each side tells the other its
 * send queue depth (which bounds the responses the peer may have to queue for it) and its RNR retry
 * time (how long the peer's NIC holds an inbound SEND waiting for a receive, as the requester's
 * rnr_retry does in InfiniBand). The acceptor reads nothing after CONNECT and the connector nothing
 * after the answer, so frames that follow stay in the socket for the NIC thread.
 */
final class TcpHandshake
{
    static final int MAGIC = 0x5256_5443; // "RVTC"
    static final int VERSION = 1;
    static final int CONNECT = 1;
    static final int ACCEPT = 2;
    static final int REJECT = 3;

    int type;
    int maxSendWr;
    long rnrRetryNanos;
    byte[] privateData = new byte[0];

    static TcpHandshake of(final int type, final int maxSendWr, final long rnrRetryNanos, final ByteBuffer privateData)
    {
        final TcpHandshake message = new TcpHandshake();
        message.type = type;
        message.maxSendWr = maxSendWr;
        message.rnrRetryNanos = rnrRetryNanos;
        if (privateData != null)
        {
            if (privateData.remaining() > VerbsContext.MAX_PRIVATE_DATA)
            {
                throw new IllegalArgumentException("private data is limited to " + VerbsContext.MAX_PRIVATE_DATA +
                    " bytes: " + privateData.remaining());
            }
            message.privateData = new byte[privateData.remaining()];
            privateData.duplicate().get(message.privateData);
        }
        return message;
    }

    void write(final OutputStream stream) throws IOException
    {
        final DataOutputStream out = new DataOutputStream(stream);
        out.writeInt(MAGIC);
        out.writeByte(VERSION);
        out.writeByte(type);
        out.writeShort(privateData.length);
        out.writeInt(maxSendWr);
        out.writeLong(rnrRetryNanos);
        out.write(privateData);
        out.flush();
    }

    /** Reads exactly one message (no read-ahead). */
    static TcpHandshake read(final InputStream stream) throws IOException
    {
        final DataInputStream in = new DataInputStream(stream);
        if (in.readInt() != MAGIC)
        {
            throw new IOException("not a tcp:// verbs peer (bad magic)");
        }
        final int version = in.readUnsignedByte();
        if (version != VERSION)
        {
            throw new IOException("tcp:// verbs peer speaks version " + version + ", this side " + VERSION);
        }
        final TcpHandshake message = new TcpHandshake();
        message.type = in.readUnsignedByte();
        final int length = in.readUnsignedShort();
        message.maxSendWr = in.readInt();
        message.rnrRetryNanos = in.readLong();
        if (length > VerbsContext.MAX_PRIVATE_DATA || message.maxSendWr <= 0 || message.rnrRetryNanos < 0 ||
            message.type < CONNECT || message.type > REJECT)
        {
            throw new IOException("malformed tcp:// handshake");
        }
        message.privateData = new byte[length];
        in.readFully(message.privateData);
        return message;
    }

    ByteBuffer privateDataBuffer()
    {
        return ByteBuffer.wrap(privateData).asReadOnlyBuffer();
    }
}
