package io.reverb.rdma.provider.tcp;

import io.reverb.rdma.verbs.VerbsContext;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;

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
 * The connector sends CONNECT, the acceptor answers ACCEPT or REJECT (or, from the provider itself, REFUSE).
 * Each side tells the other its send queue depth (which bounds the responses the peer may have to queue for it) and its RNR retry
 * time (how long the peer's NIC holds an inbound SEND waiting for a receive, as the requester's
 * rnr_retry does in InfiniBand). The acceptor reads nothing after CONNECT and the connector nothing
 * after the answer, so frames that follow stay in the socket for the NIC thread.
 *
 * <p>Every field is checked against a local limit before anything is sized from it: a peer's send
 * queue depth sizes this side's response ring, so it is at most {@link #MAX_PEER_SEND_WR}; its RNR
 * retry time holds this side's NIC, so it is at most {@link #MAX_PEER_RNR_RETRY_NANOS}.
 */
final class TcpHandshake
{
    static final int MAGIC = 0x5256_5443; // "RVTC"
    /** 2: the frame header carries piggybacked ACKs ({@link TcpFrame}); a version-1 peer would never see them. */
    static final int VERSION = 2;
    static final int CONNECT = 1;
    static final int ACCEPT = 2;
    static final int REJECT = 3;
    /**
     * The provider refused before the engine saw the request (one side uses TLS, the other not); the private data is
     * the reason in US-ASCII. Sent in plaintext.
     */
    static final int REFUSE = 4;
    /** Bytes before the private data. */
    static final int HEADER_LENGTH = 20;
    /** Largest send queue depth a peer may announce (sizes the ring of answers owed to it). */
    static final int MAX_PEER_SEND_WR = 1 << 16;
    /** Longest RNR retry time a peer may ask this side's NIC to hold its SENDs for. */
    static final long MAX_PEER_RNR_RETRY_NANOS = 60_000_000_000L;

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

    /**
     * @param reason why, US-ASCII, at most {@link VerbsContext#MAX_PRIVATE_DATA} bytes kept.
     * @return a REFUSE message, encoded.
     */
    static ByteBuffer refuse(final String reason)
    {
        final byte[] text = reason.getBytes(StandardCharsets.US_ASCII);
        return of(REFUSE, 1, 0, ByteBuffer.wrap(text, 0, Math.min(text.length, VerbsContext.MAX_PRIVATE_DATA))).encode();
    }

    /** @return the message, encoded (position 0). */
    ByteBuffer encode()
    {
        final ByteBuffer b = ByteBuffer.allocate(HEADER_LENGTH + privateData.length);
        b.putInt(MAGIC).put((byte)VERSION).put((byte)type).putShort((short)privateData.length).putInt(maxSendWr)
            .putLong(rnrRetryNanos).put(privateData);
        return b.flip();
    }

    /**
     * Reads exactly one message (nothing beyond it) through a stream, waiting until the deadline.
     *
     * @param stream   the stream, its socket non-blocking.
     * @param deadline {@link System#nanoTime()} deadline.
     * @return the message.
     * @throws IOException if it is malformed, the stream ends, or the deadline passes.
     */
    static TcpHandshake read(final TcpStream stream, final long deadline) throws IOException
    {
        final ByteBuffer header = ByteBuffer.allocate(HEADER_LENGTH);
        TcpStream.readFully(stream, header, deadline);
        final TcpHandshake message = decodeHeader(header.flip());
        TcpStream.readFully(stream, ByteBuffer.wrap(message.privateData), deadline);
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
        final byte[] header = new byte[HEADER_LENGTH];
        in.readFully(header);
        final TcpHandshake message = decodeHeader(ByteBuffer.wrap(header));
        in.readFully(message.privateData);
        return message;
    }

    /**
     * Decodes and validates the fixed header; the private data array is allocated at the announced
     * length (at most {@link VerbsContext#MAX_PRIVATE_DATA}) for the caller to fill.
     *
     * @param header {@link #HEADER_LENGTH} bytes from its position (big-endian).
     * @return the message, private data not yet read.
     * @throws IOException naming the field a peer got wrong.
     */
    static TcpHandshake decodeHeader(final ByteBuffer header) throws IOException
    {
        final int base = header.position();
        if (header.remaining() < HEADER_LENGTH)
        {
            throw new IOException("truncated tcp:// handshake");
        }
        if (header.getInt(base) != MAGIC)
        {
            throw new IOException("not a tcp:// verbs peer (bad magic)");
        }
        final int version = header.get(base + 4) & 0xFF;
        if (version != VERSION)
        {
            throw new IOException("tcp:// verbs peer speaks version " + version + ", this side " + VERSION);
        }
        final TcpHandshake message = new TcpHandshake();
        message.type = header.get(base + 5) & 0xFF;
        final int length = header.getShort(base + 6) & 0xFFFF;
        message.maxSendWr = header.getInt(base + 8);
        message.rnrRetryNanos = header.getLong(base + 12);
        if (message.type < CONNECT || message.type > REFUSE)
        {
            throw new IOException("malformed tcp:// handshake: message type " + message.type);
        }
        if (length > VerbsContext.MAX_PRIVATE_DATA)
        {
            throw new IOException("malformed tcp:// handshake: private data of " + length + " bytes (at most " +
                VerbsContext.MAX_PRIVATE_DATA + ")");
        }
        if (message.maxSendWr <= 0 || message.maxSendWr > MAX_PEER_SEND_WR)
        {
            throw new IOException("refused tcp:// handshake: peer send queue depth " + message.maxSendWr +
                " is outside 1.." + MAX_PEER_SEND_WR);
        }
        if (message.rnrRetryNanos < 0 || message.rnrRetryNanos > MAX_PEER_RNR_RETRY_NANOS)
        {
            throw new IOException("refused tcp:// handshake: peer RNR retry time " + message.rnrRetryNanos +
                " ns is outside 0.." + MAX_PEER_RNR_RETRY_NANOS);
        }
        message.privateData = new byte[length];
        return message;
    }

    ByteBuffer privateDataBuffer()
    {
        return ByteBuffer.wrap(privateData).asReadOnlyBuffer();
    }
}
