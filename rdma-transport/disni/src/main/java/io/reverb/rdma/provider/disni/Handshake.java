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
 *   REQUEST(private data)            ---TCP---&gt;  read by the listener's handshake thread for this socket
 *                                    &lt;---TCP---  OFFER(rdma_cm ip:port)
 *   rdma_bind_addr(own device address), rdma_resolve_addr/route, create QP
 *   SOURCE(own rdma_cm ip:port)      ---TCP---&gt;  checks ip = the TCP peer's
 *   rdma_connect                     ---CM----&gt;  claims the CONNECT_REQUEST whose peer is that ip:port;
 *                                                only now does ConnectionListener.accept() return the request
 *                                    &lt;---TCP---  ACCEPT(private data), create QP, rdma_accept
 *                                                | REJECT(private data), rdma_cm request destroyed (rejected)
 *   ESTABLISHED                                  ESTABLISHED; TCP closed on both sides
 * </pre>
 *
 * Everything the connector has to do happens before the request reaches the engine, on the listener's
 * handshake thread for that socket and within one handshake deadline, so a slow or silent connector never
 * holds up the engine's accept thread (version 2 read SOURCE and waited for the CONNECT_REQUEST there).
 *
 * <p>Frame: {@code int magic 'RVDH', byte version, byte type}, then per type: REQUEST, ACCEPT and REJECT
 * {@code byte length, bytes}; OFFER and SOURCE {@code 4 bytes IPv4, int port} (OFFER: the listener's rdma_cm
 * address, an address of its context's device, which a wildcard TCP listener's host need not be). Big-endian
 * (DataOutput).
 */
final class Handshake
{
    static final int MAGIC = 0x52564448;
    /**
     * 3: the listener OFFERs its rdma_cm address right after the REQUEST and claims the rdma_cm request before
     * the engine sees it; ACCEPT carries private data only. (2: ACCEPT carried the rdma_cm address.)
     */
    static final byte VERSION = 3;

    static final byte REQUEST = 1;
    static final byte ACCEPT = 2;
    static final byte REJECT = 3;
    static final byte SOURCE = 4;
    static final byte OFFER = 5;

    /** A decoded frame. */
    record Message(byte type, ByteBuffer privateData, InetSocketAddress rdmaCmAddress, InetSocketAddress source)
    {
        /** @return the rdma_cm port of an OFFER, else 0. */
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

    static void writeOffer(final DataOutput out, final InetSocketAddress rdmaCmAddress) throws IOException
    {
        if (!(rdmaCmAddress.getAddress() instanceof Inet4Address))
        {
            throw new IOException("rdma_cm listen address is not IPv4: " + rdmaCmAddress);
        }
        header(out, OFFER);
        out.write(rdmaCmAddress.getAddress().getAddress());
        out.writeInt(rdmaCmAddress.getPort());
    }

    static void writeAccept(final DataOutput out, final ByteBuffer privateData) throws IOException
    {
        header(out, ACCEPT);
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
            case ACCEPT:
            case REJECT:
                return new Message(type, readPrivateData(in), null, null);
            case OFFER:
                return new Message(type, null, readIpv4(in), null);
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
