package io.reverb.rdma.provider.shm;

import io.reverb.rdma.verbs.VerbsContext;
import java.io.EOFException;
import java.io.IOException;
import java.net.SocketTimeoutException;
import java.nio.BufferUnderflowException;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;

/**
 * The connection-manager messages exchanged once per connection over the Unix domain socket
 * (REQUEST from the connector, ACCEPT or REJECT from the listener). They tell each side where the
 * other's receive queue and receive CQ live and which PD its QP belongs to. After the handshake the
 * socket carries only 8-byte frames: {@link #FRAME_DOORBELL} (type, CQ id); its EOF is the
 * disconnect.
 *
 * <pre>
 *  int length | int magic | int type | long pid | str prefix | int qpNum | int pdId | int recvCqId |
 *  str recvQueueFile | str recvCqFile | int privateLength | privateData
 * </pre>
 */
final class Handshake
{
    static final int MAGIC = 0x5256_4853; // "RVHS"
    static final int REQUEST = 1;
    static final int ACCEPT = 2;
    static final int REJECT = 3;

    /** Post-handshake frame: "a CQ of yours that was armed got a completion". */
    static final int FRAME_DOORBELL = 1;
    static final int FRAME_LENGTH = 8;

    static final int MAX_FRAME = 4096;
    /** Longest file name or prefix a peer may send. */
    static final int MAX_NAME = 200;

    int type;
    long pid;
    String prefix = "";
    int qpNum;
    int pdId;
    int recvCqId;
    String recvQueueFile = "";
    String recvCqFile = "";
    byte[] privateData = new byte[0];

    static byte[] copyPrivateData(final ByteBuffer privateData)
    {
        if (privateData == null)
        {
            return new byte[0];
        }
        if (privateData.remaining() > VerbsContext.MAX_PRIVATE_DATA)
        {
            throw new IllegalArgumentException("private data is limited to " + VerbsContext.MAX_PRIVATE_DATA +
                " bytes: " + privateData.remaining());
        }
        final byte[] bytes = new byte[privateData.remaining()];
        privateData.duplicate().get(bytes);
        return bytes;
    }

    void write(final SocketChannel channel) throws IOException
    {
        final ByteBuffer buffer = ByteBuffer.allocate(MAX_FRAME);
        buffer.putInt(0).putInt(MAGIC).putInt(type).putLong(pid);
        putString(buffer, prefix);
        buffer.putInt(qpNum).putInt(pdId).putInt(recvCqId);
        putString(buffer, recvQueueFile);
        putString(buffer, recvCqFile);
        buffer.putInt(privateData.length).put(privateData);
        buffer.putInt(0, buffer.position() - 4);
        buffer.flip();
        while (buffer.hasRemaining())
        {
            channel.write(buffer);
        }
    }

    /**
     * Reads one message from a blocking-mode socket, waiting at most until {@code deadlineNanos}.
     */
    static Handshake read(final SocketChannel channel, final long deadlineNanos) throws IOException
    {
        final ByteBuffer lengthBuffer = ByteBuffer.allocate(4);
        readFully(channel, lengthBuffer, deadlineNanos);
        lengthBuffer.flip();
        final ByteBuffer buffer = ByteBuffer.allocate(bodyLength(lengthBuffer));
        readFully(channel, buffer, deadlineNanos);
        buffer.flip();
        return decode(buffer);
    }

    /**
     * @param header the 4-byte length prefix.
     * @return the length of the message that follows, checked against {@link #MAX_FRAME}.
     * @throws IOException if out of bounds.
     */
    static int bodyLength(final ByteBuffer header) throws IOException
    {
        final int length = header.getInt(header.position());
        if (length <= 0 || length > MAX_FRAME)
        {
            throw new IOException("malformed shm handshake (length " + length + ", at most " + MAX_FRAME + ")");
        }
        return length;
    }

    /**
     * Decodes a message (after its length prefix). Every length is checked against what remains and
     * against its own limit before anything is allocated from it; file names cannot leave the directory.
     *
     * @param buffer the message.
     * @return the decoded message.
     * @throws IOException if malformed.
     */
    static Handshake decode(final ByteBuffer buffer) throws IOException
    {
        try
        {
            if (buffer.getInt() != MAGIC)
            {
                throw new IOException("not a Reverb shm peer (bad handshake magic)");
            }
            final Handshake message = new Handshake();
            message.type = buffer.getInt();
            if (message.type < REQUEST || message.type > REJECT)
            {
                throw new IOException("malformed shm handshake (type " + message.type + ")");
            }
            message.pid = buffer.getLong();
            message.prefix = getName(buffer);
            message.qpNum = buffer.getInt();
            message.pdId = buffer.getInt();
            message.recvCqId = buffer.getInt();
            message.recvQueueFile = getName(buffer);
            message.recvCqFile = getName(buffer);
            final int privateLength = buffer.getInt();
            if (privateLength < 0 || privateLength > VerbsContext.MAX_PRIVATE_DATA || privateLength > buffer.remaining())
            {
                throw new IOException("malformed shm handshake (private data " + privateLength + ")");
            }
            message.privateData = new byte[privateLength];
            buffer.get(message.privateData);
            return message;
        }
        catch (final BufferUnderflowException ex)
        {
            throw new IOException("malformed shm handshake (truncated)", ex);
        }
    }

    private static void putString(final ByteBuffer buffer, final String value)
    {
        final byte[] bytes = value.getBytes(StandardCharsets.UTF_8);
        buffer.putShort((short)bytes.length).put(bytes);
    }

    /** Reads a file name, refusing anything that could leave the shm directory. */
    private static String getName(final ByteBuffer buffer) throws IOException
    {
        final int length = buffer.getShort() & 0xFFFF;
        if (length > MAX_NAME || length > buffer.remaining())
        {
            throw new IOException("malformed shm handshake (file name of " + length + " bytes)");
        }
        final byte[] bytes = new byte[length];
        buffer.get(bytes);
        final String name = new String(bytes, StandardCharsets.UTF_8);
        for (int i = 0; i < name.length(); i++)
        {
            final char c = name.charAt(i);
            if (!(Character.isLetterOrDigit(c) || c == '-' || c == '_'))
            {
                throw new IOException("malformed shm handshake (file name '" + name + "')");
            }
        }
        return name;
    }

    private static void readFully(final SocketChannel channel, final ByteBuffer buffer, final long deadlineNanos)
        throws IOException
    {
        // Cold path: a temporary selector gives the read a timeout (blocking channels have none).
        channel.configureBlocking(false);
        try (Selector selector = Selector.open())
        {
            channel.register(selector, SelectionKey.OP_READ);
            while (buffer.hasRemaining())
            {
                if (channel.read(buffer) < 0)
                {
                    throw new EOFException("shm peer closed the connection during the handshake");
                }
                if (!buffer.hasRemaining())
                {
                    break;
                }
                final long remaining = deadlineNanos - System.nanoTime();
                if (remaining <= 0)
                {
                    throw new SocketTimeoutException("shm handshake timed out");
                }
                selector.select(Math.max(1, remaining / 1_000_000));
                selector.selectedKeys().clear();
            }
        }
        finally
        {
            channel.configureBlocking(true);
        }
    }
}
