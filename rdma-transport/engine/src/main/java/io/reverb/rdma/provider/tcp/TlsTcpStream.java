package io.reverb.rdma.provider.tcp;

import io.reverb.rdma.provider.handshake.ListenerHandshakes;
import io.reverb.rdma.verbs.PeerAuthenticationException;
import io.reverb.rdma.verbs.TlsConfig;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.SelectableChannel;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.util.Locale;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.SSLEngineResult;
import javax.net.ssl.SSLException;
import javax.net.ssl.SSLSession;

/**
 * A tcp QP's socket inside a TLS session (JDK {@link SSLEngine}), non-blocking: the connection handshake and every
 * frame after it are encrypted. One thread at a time (the connecting thread, the listener's handshake thread, then
 * whichever thread holds the QP's wire lock: the NIC thread, the poller that reads the socket, a posting thread).
 *
 * <p>Reads decrypt into the caller's buffer (or, when it has less room than a record, into a buffer of this
 * stream's, reported by {@link #hasBufferedInput()} since the socket will not signal it). Writes seal records into
 * an outbound buffer that {@link #flush()} moves to the socket (the {@link TcpLink} contract). It is the handshake's
 * stream ({@link TcpStream}) and then, the same object with whatever it read ahead, the QP's link.
 *
 * <p>A peer that speaks plaintext where TLS is expected is told so in plaintext (a {@link TcpHandshake#REFUSE}), and
 * a plaintext refusal received by a TLS client becomes a clear {@link PeerAuthenticationException}; a TLS failure
 * (certificate not trusted, host name not in it, no client certificate where one is required) sends the TLS alert
 * to the peer and fails with the JDK's reason and a hint.
 */
final class TlsTcpStream implements TcpStream, TcpLink
{
    private static final ByteBuffer EMPTY = ByteBuffer.allocate(0);
    /** TLS record content types (change_cipher_spec 20 ... application_data 23). */
    private static final int FIRST_CONTENT_TYPE = 20;
    private static final int LAST_CONTENT_TYPE = 23;
    private static final int RECORD_HEADER = 5;
    private static final int UNDERFLOW = -2;
    private static final int CLOSED = -1;

    private final SocketChannel channel;
    private final SSLEngine engine;
    private final boolean client;
    private final String peer;
    private final int packetSize;
    private final ByteBuffer netIn;
    private final ByteBuffer netOut;
    private ByteBuffer appIn;
    private final ByteBuffer[] single = new ByteBuffer[1];
    private boolean firstBytesChecked;
    private boolean inboundClosed;

    private TlsTcpStream(final SocketChannel channel, final SSLEngine engine, final boolean client, final String peer)
        throws IOException
    {
        this.channel = channel;
        this.engine = engine;
        this.client = client;
        this.peer = peer;
        this.packetSize = engine.getSession().getPacketBufferSize();
        // Room for the longest record the length field can announce, so the engine, not a full buffer, judges it.
        this.netIn = ByteBuffer.allocateDirect(64 * 1024 + 2 * packetSize);
        this.netOut = ByteBuffer.allocateDirect(4 * packetSize);
        this.appIn = ByteBuffer.allocate(engine.getSession().getApplicationBufferSize());
        try
        {
            engine.beginHandshake();
        }
        catch (final SSLException ex)
        {
            throw new IOException("cannot start a TLS session with " + peer + ": " + ex.getMessage(), ex);
        }
    }

    /**
     * @param channel a connected socket, non-blocking.
     * @param tls     the settings.
     * @param host    the host dialled (SNI, host name verification).
     * @param port    the port dialled.
     * @return the client side of a session; call {@link #handshake(long)} next.
     * @throws IOException if the session cannot start.
     */
    static TlsTcpStream client(final SocketChannel channel, final TlsConfig tls, final String host, final int port)
        throws IOException
    {
        return new TlsTcpStream(channel, tls.newEngine(true, host, port), true, "tcp://" + TcpAddress.format(host, port));
    }

    /**
     * @param channel an accepted socket, non-blocking.
     * @param tls     the settings.
     * @param peer    the peer's address, for messages.
     * @return the server side of a session; the handshake proceeds as it is read.
     * @throws IOException if the session cannot start.
     */
    static TlsTcpStream server(final SocketChannel channel, final TlsConfig tls, final String peer) throws IOException
    {
        return new TlsTcpStream(channel, tls.newEngine(false, null, -1), false, peer);
    }

    @Override
    public SocketChannel channel()
    {
        return channel;
    }

    /**
     * Completes the TLS handshake (client), waiting for the socket until the deadline.
     *
     * @param deadline {@link System#nanoTime()} deadline.
     * @throws IOException on a TLS failure ({@link PeerAuthenticationException}), EOF, or time-out.
     */
    void handshake(final long deadline) throws IOException
    {
        try (Selector selector = Selector.open())
        {
            while (true)
            {
                final int step = step(appIn);
                if (step == CLOSED)
                {
                    throw new IOException(peer + " closed the connection during the TLS handshake");
                }
                if (!isHandshaking() && netOut.position() == 0)
                {
                    return;
                }
                if (step == UNDERFLOW || netOut.position() > 0)
                {
                    TcpStream.await(channel, selector,
                        netOut.position() > 0 ? SelectionKey.OP_READ | SelectionKey.OP_WRITE : SelectionKey.OP_READ, deadline);
                }
            }
        }
    }

    /**
     * @return the TLS session: the peer's certificates, protocol and cipher suite. Its handshake is done once this
     *         stream is a QP's link (the connection handshake ran inside it).
     */
    SSLSession session()
    {
        return engine.getSession();
    }

    private boolean isHandshaking()
    {
        final SSLEngineResult.HandshakeStatus status = engine.getHandshakeStatus();
        return status != SSLEngineResult.HandshakeStatus.NOT_HANDSHAKING &&
            status != SSLEngineResult.HandshakeStatus.FINISHED;
    }

    @Override
    public int read(final ByteBuffer dst) throws IOException
    {
        int produced = drainAppIn(dst);
        while (dst.hasRemaining())
        {
            final boolean direct = appIn.position() == 0 && dst.remaining() >= appIn.capacity();
            final int step = step(direct ? dst : appIn);
            if (step == CLOSED)
            {
                return produced > 0 ? produced : -1;
            }
            if (step == UNDERFLOW)
            {
                return produced;
            }
            produced += direct ? step : drainAppIn(dst);
            if (step == 0 && wantsWrite())
            {
                return produced; // the handshake's bytes wait for the socket: the caller waits for writability
            }
        }
        return produced;
    }

    /**
     * One step: the handshake's own work, then one record unwrapped, reading the socket first if no full record
     * waits.
     *
     * @return plaintext bytes produced into {@code target} (0: a record without application data, or handshake
     *         work), {@link #UNDERFLOW} if the socket has nothing more now, {@link #CLOSED} at the end of the stream.
     */
    private int step(final ByteBuffer target) throws IOException
    {
        if (inboundClosed)
        {
            return CLOSED;
        }
        if (!handshakeWork())
        {
            return 0;
        }
        if (!hasFullRecord())
        {
            final int n = channel.read(netIn);
            if (n < 0)
            {
                inboundClosed = true;
                if (!firstBytesChecked || isHandshaking())
                {
                    throw new IOException(peer + " closed the connection during the TLS handshake" +
                        (client ? " (is TLS enabled on the server?)" : ""));
                }
                return CLOSED;
            }
            if (!firstBytesChecked && !checkFirstBytes())
            {
                return UNDERFLOW;
            }
            if (!hasFullRecord())
            {
                checkRecordHeader();
                return UNDERFLOW;
            }
        }
        netIn.flip();
        final SSLEngineResult result;
        try
        {
            result = engine.unwrap(netIn, target);
        }
        catch (final SSLException ex)
        {
            throw failed(ex);
        }
        finally
        {
            netIn.compact();
        }
        switch (result.getStatus())
        {
            case OK:
                return result.bytesProduced();
            case BUFFER_OVERFLOW:
                if (target == appIn && appIn.position() == 0)
                {
                    appIn = ByteBuffer.allocate(engine.getSession().getApplicationBufferSize());
                }
                return 0;
            case CLOSED:
                inboundClosed = true;
                return CLOSED;
            default:
                return UNDERFLOW;
        }
    }

    /**
     * Refuses at once what cannot be the start of a TLS record (a known content type, major version 3, a length
     * the protocol allows), rather than waiting out the deadline for bytes that a garbage length announced.
     */
    private void checkRecordHeader() throws IOException
    {
        if (netIn.position() < RECORD_HEADER)
        {
            return;
        }
        final int type = netIn.get(0) & 0xFF;
        final int length = ((netIn.get(3) & 0xFF) << 8) | (netIn.get(4) & 0xFF);
        if (type < FIRST_CONTENT_TYPE || type > LAST_CONTENT_TYPE || netIn.get(1) != 3 || length > packetSize)
        {
            throw failed(new SSLException("not a TLS record (content type " + type + ", length " + length + ")"));
        }
    }

    /** @return true if {@link #netIn} holds at least one whole record (its length as announced). */
    private boolean hasFullRecord()
    {
        final int filled = netIn.position();
        if (filled < RECORD_HEADER)
        {
            return false;
        }
        final int length = ((netIn.get(3) & 0xFF) << 8) | (netIn.get(4) & 0xFF);
        // A record longer than the buffer is malformed: let the engine say so.
        return filled >= RECORD_HEADER + length || filled == netIn.capacity();
    }

    /**
     * Looks at the first bytes from the peer: a TLS record goes on to the engine; a plaintext tcp:// handshake is
     * answered (server) or read (client) as a refusal that says which side lacks TLS.
     *
     * @return true once the first bytes are known to be TLS; false if more bytes are needed.
     */
    private boolean checkFirstBytes() throws IOException
    {
        if (netIn.position() == 0)
        {
            return false;
        }
        final int first = netIn.get(0) & 0xFF;
        if (first >= FIRST_CONTENT_TYPE && first <= LAST_CONTENT_TYPE)
        {
            firstBytesChecked = true;
            return true;
        }
        if (first != (TcpHandshake.MAGIC >>> 24))
        {
            firstBytesChecked = true; // neither TLS nor tcp://: the engine names the problem
            return true;
        }
        if (!client)
        {
            throw new ListenerHandshakes.Refusal("tls", "a plaintext tcp:// client; this listener requires TLS",
                TcpHandshake.refuse("this listener requires TLS: give the client EngineConfig.tls(TlsConfig) " +
                    "trusting the server's certificate"));
        }
        if (netIn.position() < TcpHandshake.HEADER_LENGTH)
        {
            return false;
        }
        final ByteBuffer view = netIn.duplicate().flip();
        final TcpHandshake message = TcpHandshake.decodeHeader(view);
        if (netIn.position() < TcpHandshake.HEADER_LENGTH + message.privateData.length)
        {
            return false;
        }
        view.position(TcpHandshake.HEADER_LENGTH);
        view.get(message.privateData);
        throw new PeerAuthenticationException(peer + " refused the connection: " +
            (message.type == TcpHandshake.REFUSE ? new String(message.privateData, StandardCharsets.US_ASCII) :
                "it answered in plaintext (it does not use TLS)"), null);
    }

    /**
     * Runs the handshake's delegated tasks and wraps what it asks to send.
     *
     * @return false if sealed handshake bytes could not all be written (wait for writability).
     */
    private boolean handshakeWork() throws IOException
    {
        while (true)
        {
            switch (engine.getHandshakeStatus())
            {
                case NEED_TASK:
                    Runnable task;
                    while ((task = engine.getDelegatedTask()) != null)
                    {
                        task.run();
                    }
                    break;
                case NEED_WRAP:
                    if (netOut.remaining() < packetSize && !flush())
                    {
                        return false;
                    }
                    final SSLEngineResult result;
                    try
                    {
                        result = engine.wrap(EMPTY, netOut);
                    }
                    catch (final SSLException ex)
                    {
                        throw failed(ex);
                    }
                    if (result.getStatus() == SSLEngineResult.Status.CLOSED)
                    {
                        flush();
                        return true;
                    }
                    break;
                default:
                    return flush();
            }
        }
    }

    private int drainAppIn(final ByteBuffer dst)
    {
        if (appIn.position() == 0)
        {
            return 0;
        }
        appIn.flip();
        final int n = Math.min(appIn.remaining(), dst.remaining());
        final int limit = appIn.limit();
        appIn.limit(appIn.position() + n);
        dst.put(appIn);
        appIn.limit(limit);
        appIn.compact();
        return n;
    }

    @Override
    public int write(final ByteBuffer src) throws IOException
    {
        single[0] = src;
        try
        {
            return (int)write(single, 0, 1);
        }
        finally
        {
            single[0] = null;
        }
    }

    /**
     * Seals as much of {@code srcs} into records as fits, writing records to the socket as the outbound buffer fills;
     * records the socket does not take now stay here until {@link #flush()}.
     *
     * @return plaintext bytes taken.
     */
    @Override
    public long write(final ByteBuffer[] srcs, final int offset, final int length) throws IOException
    {
        long taken = 0;
        while (remaining(srcs, offset, length))
        {
            if (netOut.remaining() < packetSize && !flush())
            {
                break;
            }
            final SSLEngineResult result;
            try
            {
                result = engine.wrap(srcs, offset, length, netOut);
            }
            catch (final SSLException ex)
            {
                throw failed(ex);
            }
            if (result.getStatus() == SSLEngineResult.Status.CLOSED)
            {
                throw new IOException("the TLS session with " + peer + " is closed");
            }
            taken += result.bytesConsumed();
            if (result.getHandshakeStatus() == SSLEngineResult.HandshakeStatus.NEED_TASK && !handshakeWork())
            {
                break;
            }
        }
        flush();
        return taken;
    }

    private static boolean remaining(final ByteBuffer[] buffers, final int offset, final int length)
    {
        for (int i = offset; i < offset + length; i++)
        {
            if (buffers[i].hasRemaining())
            {
                return true;
            }
        }
        return false;
    }

    @Override
    public long read(final ByteBuffer[] dsts, final int offset, final int length) throws IOException
    {
        long total = 0;
        for (int i = offset; i < offset + length; i++)
        {
            if (!dsts[i].hasRemaining())
            {
                continue;
            }
            final int n = read(dsts[i]);
            if (n < 0)
            {
                return total > 0 ? total : -1;
            }
            total += n;
            if (dsts[i].hasRemaining())
            {
                break; // nothing more available now
            }
        }
        return total;
    }

    @Override
    public SelectableChannel selectable()
    {
        return channel;
    }

    @Override
    public boolean wantsWrite()
    {
        return netOut.position() > 0;
    }

    @Override
    public boolean hasBufferedInput()
    {
        return appIn.position() > 0 || hasFullRecord();
    }

    @Override
    public boolean flush() throws IOException
    {
        if (netOut.position() == 0)
        {
            return true;
        }
        netOut.flip();
        try
        {
            channel.write(netOut);
        }
        finally
        {
            netOut.compact();
        }
        return netOut.position() == 0;
    }

    @Override
    public void shutdownOutput() throws IOException
    {
        engine.closeOutbound();
        try
        {
            handshakeWork(); // the close_notify, best effort: a full socket drops it
        }
        catch (final IOException ignore)
        {
            // Shutting down anyway.
        }
        channel.shutdownOutput();
    }

    @Override
    public void close()
    {
        TcpVerbsContext.closeQuietly(channel);
    }

    /** Sends the alert the engine has for the peer (best effort), then says what failed, with a hint. */
    private IOException failed(final SSLException ex)
    {
        try
        {
            for (int i = 0; i < 4 && engine.getHandshakeStatus() == SSLEngineResult.HandshakeStatus.NEED_WRAP; i++)
            {
                engine.wrap(EMPTY, netOut);
            }
            flush();
        }
        catch (final IOException | RuntimeException ignore)
        {
            // The alert is a courtesy; the failure is reported anyway.
        }
        final String reason = ex.getMessage() == null ? ex.toString() : ex.getMessage();
        if (!client)
        {
            return new ListenerHandshakes.Refusal("tls", "TLS handshake failed: " + reason + hint(reason, false), null);
        }
        return new PeerAuthenticationException("TLS with " + peer + " failed: " + reason + hint(reason, true), ex);
    }

    /**
     * @param reason the JSSE failure's message.
     * @param dialled whether this side is the client.
     * @return what the failure most likely means, in parentheses, or "" when it is not recognised.
     */
    static String hint(final String reason, final boolean dialled)
    {
        final String text = reason.toLowerCase(Locale.ROOT);
        // Host name first: JDK 25 prefixes the alert it sends, so a name mismatch reads "(certificate_unknown) No
        // subject alternative names matching IP address ..." (JDK 17: no prefix) and would pass for an unknown CA.
        if (text.contains("subject alternative") || text.contains("no name matching"))
        {
            return " (the server's certificate does not name the host dialled; see TlsConfig.verifyHostname)";
        }
        if (text.contains("pkix") || text.contains("certificate_unknown") || text.contains("unknown_ca"))
        {
            return dialled ? " (the server's certificate does not chain to a CA this side's TlsConfig trusts)" :
                " (the peer does not trust this side's certificate, or this side does not trust the client's)";
        }
        if (text.contains("certificate_required") || text.contains("empty client certificate") ||
            text.contains("bad_certificate"))
        {
            return dialled ? " (the server requires a client certificate it trusts: mutual TLS)" :
                " (mutual TLS: the client sent no certificate, or one this side does not trust)";
        }
        if (text.contains("unrecognized ssl message") || text.contains("plaintext"))
        {
            return " (the peer does not speak TLS)";
        }
        return "";
    }

    @Override
    public String toString()
    {
        return "TlsTcpStream{" + peer + ", " + engine.getSession().getProtocol() + '}';
    }
}
