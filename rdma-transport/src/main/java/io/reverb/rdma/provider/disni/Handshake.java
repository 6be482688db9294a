package io.reverb.rdma.provider.disni;

import io.reverb.rdma.verbs.VerbsContext;
import java.io.DataInput;
import java.io.DataOutput;
import java.io.IOException;
import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;

/**
 * Reverb's connection handshake for {@code rdma://}, carried over a TCP connection to the listener's
 * {@code host:port} before the rdma_cm connection is made.
 *
 * <p>Why: DiSNi 2.1 cannot carry the SPI's connection private data through rdma_cm. Its
 * {@code getCmEvent} acknowledges the event inside libdisni and drops {@code event->param.conn.private_data},
 * its {@code accept} sends no private data, and it has no {@code rdma_reject}. So, as perftest does with
 * its out-of-band TCP exchange, the private data, the accept/reject decision and the rdma_cm port travel
 * over TCP; rdma_cm then connects the queue pairs.
 *
 * <pre>
 *   connector                                   listener (TCP host:port, rdma_cm host:ephemeral)
 *   REQUEST(private data)            ---TCP---&gt;  ConnectionListener.accept() returns the request
 *                                    &lt;---TCP---  ACCEPT(rdma_cm ip:port, private data) | REJECT(private data)
 *   rdma_bind_addr(own device address), rdma_resolve_addr/route, create QP
 *   SOURCE(own rdma_cm ip:port)      ---TCP---&gt;  checks ip = the TCP peer's; matches the CONNECT_REQUEST
 *                                                whose peer is that ip:port
 *   rdma_connect                     ---CM----&gt;  create QP, rdma_accept
 *   ESTABLISHED                                  ESTABLISHED; TCP closed on both sides
 * </pre>
 *
 * Frame: {@code int magic 'RVDH', byte version, byte type}, then per type: REQUEST and REJECT
 * {@code byte length, bytes}; ACCEPT {@code 4 bytes IPv4, int rdmaPort, byte length, bytes} (the listener's
 * rdma_cm address: an address of its context's device, which a wildcard TCP listener's host need not be);
 * SOURCE {@code 4 bytes IPv4, int port}. Big-endian (DataOutput).
 */
final class Handshake
{
    static final int MAGIC = 0x52564448;
    /** 2: ACCEPT carries the rdma_cm IPv4 address as well as the port (the listener's device address). */
    static final byte VERSION = 2;

    static final byte REQUEST = 1;
    static final byte ACCEPT = 2;
    static final byte REJECT = 3;
    static final byte SOURCE = 4;

    /** A decoded frame. */
    record Message(byte type, ByteBuffer privateData, InetSocketAddress rdmaCmAddress, InetSocketAddress source)
    {
        /** @return the rdma_cm port of an ACCEPT, else 0. */
        int rdmaPort()
        {
            return rdmaCmAddress == null ? 0 : rdmaCmAddress.getPort();
        }
    }

    private Handshake()
    {
    }

    static void writeRequest(final DataOutput out, final ByteBuffer privateData) throws IOException
    {
        header(out, REQUEST);
        writePrivateData(out, privateData);
    }

    static void writeAccept(final DataOutput out, final InetSocketAddress rdmaCmAddress, final ByteBuffer privateData)
        throws IOException
    {
        if (!(rdmaCmAddress.getAddress() instanceof Inet4Address))
        {
            throw new IOException("rdma_cm listen address is not IPv4: " + rdmaCmAddress);
        }
        header(out, ACCEPT);
        out.write(rdmaCmAddress.getAddress().getAddress());
        out.writeInt(rdmaCmAddress.getPort());
        writePrivateData(out, privateData);
    }

    static void writeReject(final DataOutput out, final ByteBuffer privateData) throws IOException
    {
        header(out, REJECT);
        writePrivateData(out, privateData);
    }

    static void writeSource(final DataOutput out, final InetSocketAddress source) throws IOException
    {
        if (!(source.getAddress() instanceof Inet4Address))
        {
            throw new IOException("rdma_cm source is not IPv4: " + source);
        }
        header(out, SOURCE);
        out.write(source.getAddress().getAddress());
        out.writeInt(source.getPort());
    }

    /**
     * @param in stream.
     * @return the next frame.
     * @throws IOException on EOF, a foreign peer or a version mismatch.
     */
    static Message read(final DataInput in) throws IOException
    {
        final int magic = in.readInt();
        if (magic != MAGIC)
        {
            throw new IOException("not a Reverb rdma:// handshake (magic 0x" + Integer.toHexString(magic) + ")");
        }
        final byte version = in.readByte();
        if (version != VERSION)
        {
            throw new IOException("unsupported rdma:// handshake version " + version + ", expected " + VERSION);
        }
        final byte type = in.readByte();
        switch (type)
        {
            case REQUEST:
            case REJECT:
                return new Message(type, readPrivateData(in), null, null);
            case ACCEPT:
            {
                final InetSocketAddress cm = readIpv4(in);
                return new Message(type, readPrivateData(in), cm, null);
            }
            case SOURCE:
                return new Message(type, null, null, readIpv4(in));
            default:
                throw new IOException("unknown rdma:// handshake frame type " + type);
        }
    }

    /**
     * @param in       stream.
     * @param expected type wanted.
     * @return the frame.
     * @throws IOException if another type arrives.
     */
    static Message read(final DataInput in, final byte expected) throws IOException
    {
        final Message message = read(in);
        if (message.type() != expected)
        {
            throw new IOException("rdma:// handshake: expected frame type " + expected + ", got " + message.type());
        }
        return message;
    }

    private static InetSocketAddress readIpv4(final DataInput in) throws IOException
    {
        final byte[] ip = new byte[4];
        in.readFully(ip);
        final int port = in.readInt();
        if (port < 0 || port > 0xFFFF)
        {
            throw new IOException("rdma:// handshake: port " + port + " out of range");
        }
        return new InetSocketAddress(InetAddress.getByAddress(ip), port);
    }

    private static void header(final DataOutput out, final byte type) throws IOException
    {
        out.writeInt(MAGIC);
        out.writeByte(VERSION);
        out.writeByte(type);
    }

    private static void writePrivateData(final DataOutput out, final ByteBuffer privateData) throws IOException
    {
        if (privateData == null)
        {
            out.writeByte(0);
            return;
        }
        final int length = privateData.remaining();
        if (length > VerbsContext.MAX_PRIVATE_DATA)
        {
            throw new IllegalArgumentException(
                "private data is " + length + " bytes, at most " + VerbsContext.MAX_PRIVATE_DATA + " allowed");
        }
        out.writeByte(length);
        final ByteBuffer copy = privateData.duplicate();
        for (int i = 0; i < length; i++)
        {
            out.writeByte(copy.get());
        }
    }

    private static ByteBuffer readPrivateData(final DataInput in) throws IOException
    {
        final int length = in.readUnsignedByte();
        if (length > VerbsContext.MAX_PRIVATE_DATA)
        {
            throw new IOException("rdma:// handshake: private data of " + length + " bytes");
        }
        final byte[] bytes = new byte[length];
        in.readFully(bytes);
        return ByteBuffer.wrap(bytes).asReadOnlyBuffer();
    }
}
