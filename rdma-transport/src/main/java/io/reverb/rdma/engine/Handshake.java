package io.reverb.rdma.engine;

import io.reverb.rdma.verbs.VerbsContext;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;

/**
 * The connection handshake, carried entirely in rdma_cm private data (at most 56 bytes each way).
 *
 * <pre>
 * connect request (connector to acceptor), 56 bytes:
 *   0 magic 'RVRB' (int)  4 version (short)  6 flags (short, bit 0: token digest present)
 *   8 receive slots (int) 12 eager limit (int) 16 max inbound message size (int) 20 reserved
 *  24 ready-word address (long) 32 ready-word rkey (int) 36 reserved
 *  40 token digest: first 16 bytes of SHA-256(token)
 *
 * accept (acceptor to connector), 24 bytes: magic, version, flags, receive slots, eager limit, max inbound.
 *
 * reject, up to 56 bytes: magic (int), version (short), reason code (short), reason text (US-ASCII).
 * </pre>
 *
 * <p>Why a ready word: the SPI creates and connects a queue pair in one call, so neither side can
 * post receives before the other may send. The connector therefore sends nothing until the
 * acceptor, having posted its receives, RDMA-WRITEs the connector's ready word (a one-sided write
 * needs no receive). The acceptor sends nothing until the connector's first batch, which carries
 * its initial credits, arrives. Thus no SEND ever finds the peer without a posted receive.
 *
 * <p>Only a digest of the token travels; it is compared in constant time
 * ({@link MessageDigest#isEqual}). It authenticates peers on a trusted fabric (same host for shm),
 * it is not protection against an eavesdropper who can replay it.
 */
final class Handshake
{
    static final int MAGIC = 0x42525652; // "RVRB" little-endian
    static final short VERSION = 1;
    static final int FLAG_TOKEN = 1;
    static final int DIGEST_LENGTH = 16;
    static final int REQUEST_LENGTH = 56;
    static final int ACCEPT_LENGTH = 24;
    static final int REJECT_TEXT_OFFSET = 8;

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
        final byte[] digest = new byte[DIGEST_LENGTH];
    }

    private Handshake()
    {
    }

    static byte[] digest(final byte[] token)
    {
        if (token == null)
        {
            return null;
        }
        try
        {
            final byte[] full = MessageDigest.getInstance("SHA-256").digest(token);
            final byte[] digest = new byte[DIGEST_LENGTH];
            System.arraycopy(full, 0, digest, 0, DIGEST_LENGTH);
            return digest;
        }
        catch (final NoSuchAlgorithmException ex)
        {
            throw new IllegalStateException("SHA-256 is required of every JVM", ex);
        }
    }

    static ByteBuffer encodeRequest(
        final EngineConfig config, final byte[] tokenDigest, final long readyAddress, final int readyRkey, final int version)
    {
        final ByteBuffer b = ByteBuffer.allocate(REQUEST_LENGTH).order(ByteOrder.LITTLE_ENDIAN);
        b.putInt(0, MAGIC);
        b.putShort(4, (short)version);
        b.putShort(6, (short)(tokenDigest != null ? FLAG_TOKEN : 0));
        b.putInt(8, config.receiveSlots());
        b.putInt(12, config.eagerLimit());
        b.putInt(16, config.maxInboundMessageSize());
        b.putLong(24, readyAddress);
        b.putInt(32, readyRkey);
        if (tokenDigest != null)
        {
            b.position(40);
            b.put(tokenDigest);
        }
        b.clear();
        return b;
    }

    static ByteBuffer encodeAccept(final EngineConfig config)
    {
        final ByteBuffer b = ByteBuffer.allocate(ACCEPT_LENGTH).order(ByteOrder.LITTLE_ENDIAN);
        b.putInt(0, MAGIC);
        b.putShort(4, VERSION);
        b.putShort(6, (short)0);
        b.putInt(8, config.receiveSlots());
        b.putInt(12, config.eagerLimit());
        b.putInt(16, config.maxInboundMessageSize());
        return b;
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
     * @param data private data of a request (full layout) or an accept (first 24 bytes).
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
        if (length >= ACCEPT_LENGTH)
        {
            hello.receiveSlots = b.getInt(base + 8);
            hello.eagerLimit = b.getInt(base + 12);
            hello.maxInbound = b.getInt(base + 16);
        }
        if (length >= REQUEST_LENGTH)
        {
            hello.readyAddress = b.getLong(base + 24);
            hello.readyRkey = b.getInt(base + 32);
            for (int i = 0; i < DIGEST_LENGTH; i++)
            {
                hello.digest[i] = b.get(base + 40 + i);
            }
        }
        return hello;
    }

    /**
     * Checks a connect request against this side's config.
     *
     * @param request        the private data.
     * @param config         this side.
     * @param expectedDigest digest of this side's token, or null if none is required.
     * @param remote         the connector's address, for the message.
     * @return null if acceptable, else the refusal to report (its reason goes into the reject).
     */
    static HandshakeException validateRequest(
        final ByteBuffer request, final EngineConfig config, final byte[] expectedDigest, final String remote)
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
                ", this side speaks v" + VERSION + "; run the same Reverb version on both sides");
        }
        if (expectedDigest != null)
        {
            final byte[] presented = (hello.flags & FLAG_TOKEN) != 0 ? hello.digest : new byte[DIGEST_LENGTH];
            // Constant-time: compare even when no token was presented.
            final boolean equal = MessageDigest.isEqual(expectedDigest, presented);
            if (!equal || (hello.flags & FLAG_TOKEN) == 0)
            {
                return new HandshakeException(HandshakeException.Reason.AUTHENTICATION,
                    "refused connection from " + remote + ": " +
                    ((hello.flags & FLAG_TOKEN) == 0 ? "no authentication token presented" : "authentication token mismatch"));
            }
        }
        if (hello.receiveSlots < EngineConfig.MIN_RECEIVE_SLOTS || hello.receiveSlots > EngineConfig.MAX_RECEIVE_SLOTS ||
            hello.eagerLimit < 0 || hello.eagerLimit > EngineConfig.MAX_EAGER_LIMIT || hello.maxInbound < 0)
        {
            return new HandshakeException(HandshakeException.Reason.GEOMETRY,
                "refused connection from " + remote + ": unacceptable geometry (receiveSlots=" + hello.receiveSlots +
                ", eagerLimit=" + hello.eagerLimit + ", maxInbound=" + hello.maxInbound + ")");
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
            case AUTHENTICATION: return ex.getMessage().contains("no authentication") ?
                "authentication token required" : "authentication token mismatch";
            case VERSION: return "server speaks engine protocol v" + VERSION;
            case PROTOCOL: return "not a Reverb engine request";
            case GEOMETRY: return "unacceptable ring geometry or limits";
            default: return "connection refused";
        }
    }
}
