package io.reverb.rdma.engine;

import io.reverb.rdma.verbs.VerbsContext;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.util.Arrays;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * The connection handshake, carried in rdma_cm private data (at most 56 bytes each way), a one-sided
 * ready write, and, when a token is configured, the connector's proof in its first batch.
 *
 * <pre>
 * connect request (connector to acceptor), 56 bytes:
 *   0 magic 'RVRB' (int)  4 version (short)  6 flags (short, bit 0: authenticating)
 *   8 receive slots (int) 12 eager limit (int) 16 max inbound message size (int) 20 reserved
 *  24 ready-word address (long) 32 ready-word rkey (int) 36 reserved
 *  40 connector nonce (16 random bytes)
 *
 * accept (acceptor to connector), 56 bytes:
 *   0 magic  4 version  6 flags (bit 0: authenticating)  8 receive slots  12 eager limit  16 max inbound  20 reserved
 *  24 acceptor nonce (16 random bytes)
 *  40 acceptor proof: HMAC-SHA256(token, "RVRB acceptor" | request[0..56) | accept[0..40)), first 16 bytes
 *
 * connector proof, the first control frame of the connector's first batch ({@link Wire#CONTROL_AUTH}):
 *      HMAC-SHA256(token, "RVRB connector" | request[0..56) | accept[0..56)), first 16 bytes
 *
 * reject, up to 56 bytes: magic (int), version (short), reason code (short), reason text (US-ASCII).
 * </pre>
 *
 * <h2>Authentication: a challenge-response, useless when replayed</h2>
 * Each side proves it holds the token by a MAC over a nonce the <em>other</em> side just chose, and over
 * both sides' handshake parameters, so nothing captured from one handshake is worth anything in another:
 * <ul>
 *   <li>The connector refuses an accept whose proof does not verify (the acceptor does not hold the token,
 *       or answers for a request it did not see); it then sends nothing.</li>
 *   <li>The acceptor admits the connection only when the connector's first batch starts with a valid
 *       proof; before that it has delivered nothing and sent nothing (it has no credits), and it never
 *       exposes memory to the peer in the handshake. A connection that does not prove itself within the
 *       handshake deadline, that sends anything else first, or that goes away first, is refused:
 *       {@link HandshakeException.Reason#AUTHENTICATION}, reported once through the error handler (one
 *       line, rate-limited) and counted by {@link EngineListener#refusedCount()}. Only then is it passed to
 *       the listener's callback.</li>
 *   <li>Proofs are compared in constant time ({@link MessageDigest#isEqual}).</li>
 * </ul>
 * An eavesdropper who records a handshake can still test guesses of the token offline against it (as with
 * any MAC of a shared secret): use a random token of at least 128 bits, not a password. With no token on
 * either side the handshake is unauthenticated; a side with a token refuses a peer without one.
 *
 * <p>Why a ready word: the SPI creates and connects a queue pair in one call, so neither side can
 * post receives before the other may send. The connector therefore sends nothing until the
 * acceptor, having posted its receives, RDMA-WRITEs the connector's ready word (a one-sided write
 * needs no receive). The acceptor sends nothing until the connector's first batch, which carries
 * its initial credits (and its proof), arrives. Thus no SEND ever finds the peer without a posted receive.
 *
 * <p>Every value read from the peer is checked against a local limit before anything is sized from it
 * (receive slots, eager limit, maximum inbound size).
 */
final class Handshake
{
    static final int MAGIC = 0x42525652; // "RVRB" little-endian
    /**
     * 3: MESSAGE frames may be compressed (rpc-core's COMPRESSED flag; a v2 peer would close the connection on the
     * first one as a protocol error, so it is refused here instead). 2: challenge-response authentication (v1 sent a
     * constant token digest).
     */
    static final short VERSION = 3;
    /** The first version whose peers read compressed MESSAGE frames. */
    static final short FIRST_VERSION_WITH_COMPRESSION = 3;
    static final int FLAG_AUTH = 1;
    static final int NONCE_LENGTH = 16;
    static final int PROOF_LENGTH = 16;
    static final int REQUEST_LENGTH = 56;
    static final int ACCEPT_LENGTH = 56;
    static final int REQUEST_NONCE_OFFSET = 40;
    static final int ACCEPT_NONCE_OFFSET = 24;
    static final int ACCEPT_PROOF_OFFSET = 40;
    static final int REJECT_TEXT_OFFSET = 8;
    private static final byte[] ACCEPTOR_LABEL = "RVRB acceptor".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] CONNECTOR_LABEL = "RVRB connector".getBytes(StandardCharsets.US_ASCII);

    /** Decoded connect request or accept. */
    static final class Hello
    {
        int magic;
        int version;
        int flags;
        int receiveSlots;
        int eagerLimit;
        int maxInbound;
        long readyAddress;
        int readyRkey;
    }

    private Handshake()
    {
    }

    static ByteBuffer encodeRequest(
        final EngineConfig config, final byte[] nonce, final long readyAddress, final int readyRkey, final int version)
    {
        final ByteBuffer b = ByteBuffer.allocate(REQUEST_LENGTH).order(ByteOrder.LITTLE_ENDIAN);
        b.putInt(0, MAGIC);
        b.putShort(4, (short)version);
        b.putShort(6, (short)(nonce != null ? FLAG_AUTH : 0));
        b.putInt(8, config.receiveSlots());
        b.putInt(12, config.eagerLimit());
        b.putInt(16, config.maxInboundMessageSize());
        b.putLong(24, readyAddress);
        b.putInt(32, readyRkey);
        if (nonce != null)
        {
            b.position(REQUEST_NONCE_OFFSET);
            b.put(nonce, 0, NONCE_LENGTH);
        }
        b.clear();
        return b;
    }

    /**
     * @param config  this side.
     * @param request the connector's request (56 bytes from its position).
     * @param token   this side's token, or null: then nonce and proof are zero and the flag is clear.
     * @param nonce   a fresh nonce (ignored without a token).
     * @return the accept's private data.
     */
    static ByteBuffer encodeAccept(final EngineConfig config, final ByteBuffer request, final byte[] token, final byte[] nonce)
    {
        final ByteBuffer b = ByteBuffer.allocate(ACCEPT_LENGTH).order(ByteOrder.LITTLE_ENDIAN);
        b.putInt(0, MAGIC);
        b.putShort(4, VERSION);
        b.putShort(6, (short)(token != null ? FLAG_AUTH : 0));
        b.putInt(8, config.receiveSlots());
        b.putInt(12, config.eagerLimit());
        b.putInt(16, config.maxInboundMessageSize());
        if (token != null)
        {
            b.position(ACCEPT_NONCE_OFFSET);
            b.put(nonce, 0, NONCE_LENGTH);
            final byte[] proof = acceptorProof(token, request, b.duplicate().clear());
            b.position(ACCEPT_PROOF_OFFSET);
            b.put(proof);
        }
        b.clear();
        return b;
    }

    /** @return the acceptor's proof over the request and the first 40 bytes of the accept (both from their positions). */
    static byte[] acceptorProof(final byte[] token, final ByteBuffer request, final ByteBuffer accept)
    {
        return mac(token, ACCEPTOR_LABEL, request, REQUEST_LENGTH, accept, ACCEPT_PROOF_OFFSET);
    }

    /** @return the connector's proof over the whole request and the whole accept (both from their positions). */
    static byte[] connectorProof(final byte[] token, final ByteBuffer request, final ByteBuffer accept)
    {
        return mac(token, CONNECTOR_LABEL, request, REQUEST_LENGTH, accept, ACCEPT_LENGTH);
    }

    private static byte[] mac(
        final byte[] token, final byte[] label, final ByteBuffer first, final int firstLength,
        final ByteBuffer second, final int secondLength)
    {
        try
        {
            final Mac mac = Mac.getInstance("HmacSHA256");
            mac.init(new SecretKeySpec(token, "HmacSHA256"));
            mac.update(label);
            final ByteBuffer a = first.duplicate();
            a.limit(a.position() + firstLength);
            mac.update(a);
            final ByteBuffer b = second.duplicate();
            b.limit(b.position() + secondLength);
            mac.update(b);
            return Arrays.copyOf(mac.doFinal(), PROOF_LENGTH);
        }
        catch (final GeneralSecurityException ex)
        {
            throw new IllegalStateException("HmacSHA256 is required of every JVM", ex);
        }
    }

    /**
     * @param proof 16 proof bytes.
     * @return them as the two longs of a control frame's id and address fields (in the wire's byte order).
     */
    static long[] proofWords(final byte[] proof)
    {
        final ByteBuffer b = ByteBuffer.wrap(proof).order(ByteOrder.nativeOrder());
        return new long[] {b.getLong(0), b.getLong(8)};
    }

    /**
     * Connector: checks the acceptor's proof.
     *
     * @param token   this side's token (not null).
     * @param request the request sent.
     * @param accept  the accept received (56 bytes from its position).
     * @param address the acceptor, for the message.
     * @return null if it verifies, else the refusal.
     */
    static HandshakeException verifyAccept(
        final byte[] token, final ByteBuffer request, final ByteBuffer accept, final String address)
    {
        final ByteBuffer b = accept.duplicate().order(ByteOrder.LITTLE_ENDIAN);
        if (b.remaining() < ACCEPT_LENGTH || (b.getShort(b.position() + 6) & FLAG_AUTH) == 0)
        {
            return new HandshakeException(HandshakeException.Reason.AUTHENTICATION, "connection to " + address +
                " refused by this side: the server does not authenticate itself (no authToken configured there), " +
                "and this side requires it; configure the same EngineConfig.authToken on both sides");
        }
        final ByteBuffer own = b.slice().order(ByteOrder.LITTLE_ENDIAN);
        final byte[] presented = new byte[PROOF_LENGTH];
        own.get(ACCEPT_PROOF_OFFSET, presented);
        if (!MessageDigest.isEqual(acceptorProof(token, request, own), presented))
        {
            return new HandshakeException(HandshakeException.Reason.AUTHENTICATION, "connection to " + address +
                " refused by this side: authentication token mismatch (the server's proof does not verify); " +
                "configure the same EngineConfig.authToken on both sides");
        }
        return null;
    }

    static ByteBuffer encodeReject(final HandshakeException.Reason reason, final String text)
    {
        final byte[] ascii = text.getBytes(StandardCharsets.US_ASCII);
        final int textLength = Math.min(ascii.length, VerbsContext.MAX_PRIVATE_DATA - REJECT_TEXT_OFFSET);
        final ByteBuffer b = ByteBuffer.allocate(REJECT_TEXT_OFFSET + textLength).order(ByteOrder.LITTLE_ENDIAN);
        b.putInt(0, MAGIC);
        b.putShort(4, VERSION);
        b.putShort(6, (short)reason.code());
        b.position(REJECT_TEXT_OFFSET);
        b.put(ascii, 0, textLength);
        b.clear();
        return b;
    }

    /**
     * @param data private data of a request (full layout) or an accept.
     * @return the fields, or null when too short to hold the magic and version.
     */
    static Hello decode(final ByteBuffer data)
    {
        final ByteBuffer b = data.duplicate().order(ByteOrder.LITTLE_ENDIAN);
        final int base = b.position();
        final int length = b.remaining();
        if (length < 8)
        {
            return null;
        }
        final Hello hello = new Hello();
        hello.magic = b.getInt(base);
        hello.version = b.getShort(base + 4);
        hello.flags = b.getShort(base + 6);
        if (length >= 20)
        {
            hello.receiveSlots = b.getInt(base + 8);
            hello.eagerLimit = b.getInt(base + 12);
            hello.maxInbound = b.getInt(base + 16);
        }
        if (length >= 36)
        {
            hello.readyAddress = b.getLong(base + 24);
            hello.readyRkey = b.getInt(base + 32);
        }
        return hello;
    }

    /** @return null if the peer's geometry and limits are within this side's limits, else what is wrong. */
    static String checkGeometry(final Hello hello)
    {
        if (hello.receiveSlots < EngineConfig.MIN_RECEIVE_SLOTS || hello.receiveSlots > EngineConfig.MAX_RECEIVE_SLOTS ||
            hello.eagerLimit < 0 || hello.eagerLimit > EngineConfig.MAX_EAGER_LIMIT ||
            hello.maxInbound < 0 || hello.maxInbound > EngineConfig.MAX_SIZE_CLASS)
        {
            return "unacceptable geometry (receiveSlots=" + hello.receiveSlots + " of " + EngineConfig.MIN_RECEIVE_SLOTS +
                ".." + EngineConfig.MAX_RECEIVE_SLOTS + ", eagerLimit=" + hello.eagerLimit + " of 0.." +
                EngineConfig.MAX_EAGER_LIMIT + ", maxInbound=" + hello.maxInbound + " of 0.." + EngineConfig.MAX_SIZE_CLASS + ")";
        }
        return null;
    }

    /**
     * Checks a connect request against this side's config.
     *
     * @param request the private data.
     * @param config  this side.
     * @param token   this side's token, or null if none is required.
     * @param remote  the connector's address, for the message.
     * @return null if acceptable, else the refusal to report (its reason goes into the reject).
     */
    static HandshakeException validateRequest(
        final ByteBuffer request, final EngineConfig config, final byte[] token, final String remote)
    {
        final Hello hello = decode(request);
        if (hello == null || hello.magic != MAGIC || request.remaining() < REQUEST_LENGTH)
        {
            return new HandshakeException(HandshakeException.Reason.PROTOCOL,
                "refused connection from " + remote + ": not a Reverb engine connect request");
        }
        if (hello.version != VERSION)
        {
            return new HandshakeException(HandshakeException.Reason.VERSION,
                "refused connection from " + remote + ": it speaks engine protocol v" + hello.version +
                ", this side speaks v" + VERSION + (hello.version >= 0 && hello.version < FIRST_VERSION_WITH_COMPRESSION ?
                " (v3 added compressed messages, which the peer would misread)" : "") +
                "; run the same Reverb version on both sides");
        }
        if (token != null && (hello.flags & FLAG_AUTH) == 0)
        {
            return new HandshakeException(HandshakeException.Reason.AUTHENTICATION,
                "refused connection from " + remote + ": no authentication token presented");
        }
        final String geometry = checkGeometry(hello);
        if (geometry != null)
        {
            return new HandshakeException(HandshakeException.Reason.GEOMETRY,
                "refused connection from " + remote + ": " + geometry);
        }
        return null;
    }

    /**
     * @param privateData a reject's private data.
     * @param address     the address connected to.
     * @return the connector-side exception describing it.
     */
    static HandshakeException fromReject(final ByteBuffer privateData, final String address)
    {
        final ByteBuffer b = privateData.duplicate().order(ByteOrder.LITTLE_ENDIAN);
        if (b.remaining() < REJECT_TEXT_OFFSET || b.getInt(b.position()) != MAGIC)
        {
            return new HandshakeException(HandshakeException.Reason.OTHER,
                "connection to " + address + " was rejected without a Reverb reason (is a Reverb engine listening there?)");
        }
        final int code = b.getShort(b.position() + 6);
        final byte[] text = new byte[b.remaining() - REJECT_TEXT_OFFSET];
        b.position(b.position() + REJECT_TEXT_OFFSET);
        b.get(text);
        for (int i = 0; i < text.length; i++)
        {
            // the peer's words end up in exceptions, statuses and logs: no control bytes (line breaks, escapes)
            if (text[i] < 0x20 || text[i] > 0x7E)
            {
                text[i] = '?';
            }
        }
        final HandshakeException.Reason reason = HandshakeException.Reason.fromCode(code);
        final String hint;
        switch (reason)
        {
            case AUTHENTICATION:
                hint = "; configure the same EngineConfig.authToken on both sides";
                break;
            case VERSION:
                hint = "; run the same Reverb version on both sides";
                break;
            default:
                hint = "";
        }
        return new HandshakeException(reason, "connection to " + address + " refused by the peer (" + reason + "): " +
            new String(text, StandardCharsets.US_ASCII) + hint);
    }

    static String shortText(final HandshakeException ex)
    {
        switch (ex.reason())
        {
            case AUTHENTICATION: return "authentication token required";
            case VERSION: return "server speaks engine protocol v" + VERSION;
            case PROTOCOL: return "not a Reverb engine request";
            case GEOMETRY: return "unacceptable ring geometry or limits";
            default: return "connection refused";
        }
    }
}
