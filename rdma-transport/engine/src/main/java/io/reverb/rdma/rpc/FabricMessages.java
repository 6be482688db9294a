package io.reverb.rdma.rpc;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.util.Arrays;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * The messages with which a {@code reverb://} client and server agree on a fabric, sent as ordinary transport
 * messages over an engine connection that has completed its handshake (and so its token authentication, and TLS if
 * configured), before any RPC frame. All little-endian.
 *
 * <pre>
 * header, every message:
 *   0 magic 'RVFB' (int)   4 marker 0xF1 (byte: where an RPC frame has its protocol version, 1)   5 type (byte)
 *   6 reserved (short, 0)
 *
 * HELLO    client to server over tcp, 24 bytes:   8 client nonce (16 random bytes)
 * OFFER    server to client over tcp:
 *   8 fabrics (int: bit 0 shm, bit 1 rdma)   12 ticket (16 random bytes, one use)
 *  28 boot id (16 bytes, the server's /proc/sys/kernel/random/boot_id)
 *  44 shm directory device (long)   52 shm directory inode (long)
 *  60 shm name, secret file name, rdma address (host:port), rdma device: each a length (uint16) and US-ASCII
 *   . rdma subnet prefix length (byte)
 *   . proof: HMAC-SHA256(token, "RVFB offer" | client nonce | offer up to the proof), first 16 bytes; zeros
 *     without a token
 * CLAIM    client to server over the new fabric, 92 bytes:
 *   8 ticket (16)   24 claim nonce (16 random bytes)
 *  40 binding (36): the tcp connection the offer came over, as the client's socket has it: its local address, then
 *     the remote one (the address it dialled), each 16 bytes of IPv6 (IPv4 mapped) and a port (big-endian uint16)
 *  76 proof: HMAC-SHA256(key, "RVFB claim" | ticket | claim nonce | binding), first 16 bytes
 * CLAIMED  server to client, 24 bytes:   8 proof: HMAC-SHA256(key, "RVFB claimed" | ticket | claim nonce), 16 bytes
 * REFUSED  server to client:   8 reason: length (uint16) and US-ASCII
 * </pre>
 *
 * The key of a claim is, for shm, the 32 random bytes of the server's secret file in the shm directory (only a process
 * of the same user on the same host can read it); for rdma, the engine token, or without one the ticket itself (then
 * the claim proves only that the client got the offer). The server admits a claim only when its binding is the tcp
 * connection it issued the ticket on, as the server's socket has it (peer, then local address): an offer fetched by
 * whoever answers at the dialled address and relayed to the client names a ticket of that relay's connection, and is
 * refused (so is an upgrade through a NAT or proxy: the client stays on tcp and says why). A message whose fifth byte
 * is not 0xF1 is an RPC frame: a plain {@code tcp://} client's first message never looks like a HELLO.
 *
 * <p>Every field from a peer is checked before use: lengths within the message and {@value #MAX_STRING}, at most
 * {@link #MAX_OFFER_LENGTH} bytes in all, no unknown fabric bit, shm names of the shm fabric's alphabet (no '/', not
 * starting with '.', at most 64 characters) with the secret file the one of that name, and the rdma address a literal
 * IP address and port ({@link #rdmaEndpoint}): never a host name to resolve, never a query or fragment.
 */
final class FabricMessages
{
    static final int MAGIC = 0x42465652; // "RVFB" little-endian
    static final byte MARKER = (byte)0xF1;
    static final int HEADER_LENGTH = 8;
    static final int NONCE_LENGTH = 16;
    static final int PROOF_LENGTH = 16;
    static final int SECRET_LENGTH = 32;
    static final byte HELLO = 1;
    static final byte OFFER = 2;
    static final byte CLAIM = 3;
    static final byte CLAIMED = 4;
    static final byte REFUSED = 5;
    static final int FABRIC_SHM = 1;
    static final int FABRIC_RDMA = 2;
    static final int HELLO_LENGTH = HEADER_LENGTH + NONCE_LENGTH;
    /** An endpoint in a claim's binding: an IPv6 address (IPv4 mapped) and a port. */
    static final int ENDPOINT_LENGTH = 18;
    static final int BINDING_LENGTH = 2 * ENDPOINT_LENGTH;
    static final int CLAIM_LENGTH = HEADER_LENGTH + 2 * NONCE_LENGTH + BINDING_LENGTH + PROOF_LENGTH;
    static final int CLAIMED_LENGTH = HEADER_LENGTH + PROOF_LENGTH;
    /** Longest string field of an offer, and of a refusal's reason. */
    static final int MAX_STRING = 255;
    private static final int OFFER_FIXED = 60;
    /** The longest well-formed offer: four strings of {@value #MAX_STRING} bytes. */
    static final int MAX_OFFER_LENGTH = OFFER_FIXED + 4 * (2 + MAX_STRING) + 1 + PROOF_LENGTH;
    private static final byte[] OFFER_LABEL = "RVFB offer".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] CLAIM_LABEL = "RVFB claim".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] CLAIMED_LABEL = "RVFB claimed".getBytes(StandardCharsets.US_ASCII);
    private static final SecureRandom RANDOM = new SecureRandom();

    /** What a server offers, decoded and checked. */
    static final class Offer
    {
        int fabrics;
        byte[] ticket = new byte[NONCE_LENGTH];
        byte[] bootId = new byte[16];
        long shmDevice;
        long shmInode;
        String shmName = "";
        String secretFile = "";
        String rdmaAddress = "";
        String rdmaDevice = "";
        int rdmaPrefix;

        boolean offers(final int fabric)
        {
            return (fabrics & fabric) != 0;
        }
    }

    private FabricMessages()
    {
    }

    static byte[] random(final int length)
    {
        final byte[] bytes = new byte[length];
        RANDOM.nextBytes(bytes);
        return bytes;
    }

    /**
     * @param message an inbound message (from its position; not moved).
     * @return its type if it is one of these messages, else 0 (an RPC frame).
     */
    static byte type(final ByteBuffer message)
    {
        final ByteBuffer b = message.duplicate().order(ByteOrder.LITTLE_ENDIAN);
        if (b.remaining() < HEADER_LENGTH || b.getInt(b.position()) != MAGIC || b.get(b.position() + 4) != MARKER)
        {
            return 0;
        }
        return b.get(b.position() + 5);
    }

    private static ByteBuffer header(final int length, final byte type)
    {
        final ByteBuffer b = ByteBuffer.allocate(length).order(ByteOrder.LITTLE_ENDIAN);
        b.putInt(MAGIC).put(MARKER).put(type).putShort((short)0);
        return b;
    }

    static ByteBuffer hello(final byte[] nonce)
    {
        return header(HELLO_LENGTH, HELLO).put(nonce).flip();
    }

    /** @return the client nonce of a HELLO, or null if it is malformed. */
    static byte[] helloNonce(final ByteBuffer message)
    {
        if (message.remaining() != HELLO_LENGTH)
        {
            return null;
        }
        final byte[] nonce = new byte[NONCE_LENGTH];
        message.duplicate().position(message.position() + HEADER_LENGTH).get(nonce);
        return nonce;
    }

    /**
     * @param offer       what to offer (strings checked by the caller: US-ASCII, at most {@value #MAX_STRING}).
     * @param clientNonce the HELLO's nonce.
     * @param token       the engine token, or null.
     * @return the OFFER message.
     */
    static ByteBuffer offer(final Offer offer, final byte[] clientNonce, final byte[] token)
    {
        final byte[][] strings = {
            ascii(offer.shmName), ascii(offer.secretFile), ascii(offer.rdmaAddress), ascii(offer.rdmaDevice)};
        int length = OFFER_FIXED + 1 + PROOF_LENGTH;
        for (final byte[] s : strings)
        {
            length += 2 + s.length;
        }
        final ByteBuffer b = header(length, OFFER);
        b.putInt(offer.fabrics).put(offer.ticket).put(offer.bootId).putLong(offer.shmDevice).putLong(offer.shmInode);
        for (final byte[] s : strings)
        {
            b.putShort((short)s.length).put(s);
        }
        b.put((byte)offer.rdmaPrefix);
        final byte[] proof = token == null ? new byte[PROOF_LENGTH] :
            mac(token, OFFER_LABEL, clientNonce, Arrays.copyOf(b.array(), b.position()));
        b.put(proof);
        return b.flip();
    }

    /**
     * Decodes and checks an OFFER: every length within the message and {@value #MAX_STRING}, names of the shm
     * fabric's alphabet, the proof when this side has a token.
     *
     * @param message     the message (from its position).
     * @param clientNonce the nonce this side sent in its HELLO.
     * @param token       this side's engine token, or null.
     * @return the offer.
     * @throws IllegalArgumentException saying what is wrong.
     */
    static Offer decodeOffer(final ByteBuffer message, final byte[] clientNonce, final byte[] token)
    {
        final ByteBuffer b = message.slice().order(ByteOrder.LITTLE_ENDIAN);
        if (b.remaining() < OFFER_FIXED + 2 * 4 + 1 + PROOF_LENGTH || b.remaining() > MAX_OFFER_LENGTH)
        {
            throw new IllegalArgumentException("offer of " + b.remaining() + " bytes is not of " +
                (OFFER_FIXED + 2 * 4 + 1 + PROOF_LENGTH) + ".." + MAX_OFFER_LENGTH);
        }
        final Offer offer = new Offer();
        b.position(HEADER_LENGTH);
        offer.fabrics = b.getInt();
        b.get(offer.ticket).get(offer.bootId);
        offer.shmDevice = b.getLong();
        offer.shmInode = b.getLong();
        offer.shmName = string(b, "shm name");
        offer.secretFile = string(b, "secret file name");
        offer.rdmaAddress = string(b, "rdma address");
        offer.rdmaDevice = string(b, "rdma device");
        if (b.remaining() != 1 + PROOF_LENGTH)
        {
            throw new IllegalArgumentException("offer has " + b.remaining() + " bytes after its strings, expected " +
                (1 + PROOF_LENGTH));
        }
        offer.rdmaPrefix = b.get() & 0xFF;
        final int signed = b.position();
        final byte[] proof = new byte[PROOF_LENGTH];
        b.get(proof);
        // first the proof: an altered offer is reported as such, whatever field was changed
        if (token != null)
        {
            final byte[] signedBytes = new byte[signed];
            b.get(0, signedBytes);
            if (!MessageDigest.isEqual(mac(token, OFFER_LABEL, clientNonce, signedBytes), proof))
            {
                throw new IllegalArgumentException("the offer's proof does not verify (not from a server holding " +
                    "this side's token, or altered on the way)");
            }
        }
        if ((offer.fabrics & ~(FABRIC_SHM | FABRIC_RDMA)) != 0)
        {
            throw new IllegalArgumentException("offer names unknown fabrics (bits " + Integer.toHexString(offer.fabrics) +
                ")");
        }
        if (offer.offers(FABRIC_SHM))
        {
            checkName(offer.shmName, "shm name");
            checkName(offer.secretFile, "secret file name");
            if (!offer.secretFile.equals(secretFileName(offer.shmName)))
            {
                throw new IllegalArgumentException("secret file name '" + offer.secretFile + "' is not the one of shm " +
                    "name '" + offer.shmName + "' (" + secretFileName(offer.shmName) + ")");
            }
        }
        if (offer.offers(FABRIC_RDMA))
        {
            final InetSocketAddress endpoint = rdmaEndpoint(offer.rdmaAddress);
            if (offer.rdmaPrefix > endpoint.getAddress().getAddress().length * 8)
            {
                throw new IllegalArgumentException("offer names rdma with a prefix of " + offer.rdmaPrefix);
            }
        }
        return offer;
    }

    /** A decoded CLAIM. */
    record Claim(byte[] ticket, byte[] nonce, byte[] binding, byte[] proof)
    {
    }

    /**
     * @param ticket     the offer's ticket.
     * @param claimNonce a fresh nonce.
     * @param binding    {@link #binding} of the tcp connection the offer came over, as this side's socket has it.
     * @param key        the claim's key (secret, token or ticket).
     * @return the CLAIM message.
     */
    static ByteBuffer claim(final byte[] ticket, final byte[] claimNonce, final byte[] binding, final byte[] key)
    {
        return header(CLAIM_LENGTH, CLAIM).put(ticket).put(claimNonce).put(binding)
            .put(mac(key, CLAIM_LABEL, ticket, claimNonce, binding)).flip();
    }

    /** @return the parts of a CLAIM, or null if it is malformed. */
    static Claim decodeClaim(final ByteBuffer message)
    {
        if (message.remaining() != CLAIM_LENGTH)
        {
            return null;
        }
        final ByteBuffer b = message.duplicate().position(message.position() + HEADER_LENGTH);
        final Claim claim = new Claim(new byte[NONCE_LENGTH], new byte[NONCE_LENGTH], new byte[BINDING_LENGTH],
            new byte[PROOF_LENGTH]);
        b.get(claim.ticket()).get(claim.nonce()).get(claim.binding()).get(claim.proof());
        return claim;
    }

    /** @return true if the claim's proof holds for this key (over its ticket, nonce and binding). */
    static boolean claimVerifies(final Claim claim, final byte[] key)
    {
        return MessageDigest.isEqual(mac(key, CLAIM_LABEL, claim.ticket(), claim.nonce(), claim.binding()),
            claim.proof());
    }

    /**
     * The binding of a claim to a tcp connection: {@code first} then {@code second}, each as an IPv6 address (IPv4
     * mapped) and a big-endian port. The client gives (its local address, the address it dialled); the server
     * expects (the connection's peer, its own local address).
     *
     * @return the {@value #BINDING_LENGTH} bytes.
     */
    static byte[] binding(final InetSocketAddress first, final InetSocketAddress second)
    {
        final ByteBuffer b = ByteBuffer.allocate(BINDING_LENGTH);
        for (final InetSocketAddress endpoint : new InetSocketAddress[] {first, second})
        {
            final byte[] address = endpoint.getAddress().getAddress();
            if (address.length == 4)
            {
                b.put(new byte[10]).putShort((short)0xFFFF);
            }
            b.put(address).putShort((short)endpoint.getPort());
        }
        return b.array();
    }

    /** @return the secret file's name of a shm name. */
    static String secretFileName(final String shmName)
    {
        return ReverbListener.SECRET_PREFIX + shmName + ReverbListener.SECRET_SUFFIX;
    }

    /**
     * Parses an offer's rdma address without any name lookup: a literal IPv4 address in dotted-decimal, or a literal
     * IPv6 address in brackets, then ':' and a port of 1..65535; nothing else (no host name, query or fragment).
     *
     * @param text the address.
     * @return it.
     * @throws IllegalArgumentException saying why it is not one.
     */
    static InetSocketAddress rdmaEndpoint(final String text)
    {
        final int colon = text.lastIndexOf(':');
        if (colon <= 0 || colon == text.length() - 1 || text.length() - colon - 1 > 5)
        {
            throw new IllegalArgumentException("rdma address '" + text + "' is not ip:port");
        }
        final int port = digits(text.substring(colon + 1), 65535, text);
        if (port == 0)
        {
            throw new IllegalArgumentException("rdma address '" + text + "' has port 0");
        }
        final String host = text.substring(0, colon);
        final byte[] address;
        if (host.startsWith("[") && host.endsWith("]"))
        {
            address = ipv6(host.substring(1, host.length() - 1), text);
        }
        else
        {
            final String[] parts = host.split("\\.", -1);
            if (parts.length != 4)
            {
                throw new IllegalArgumentException("rdma address '" + text + "' is not a literal IPv4 address or " +
                    "[IPv6 address] and a port (host names are not resolved)");
            }
            address = new byte[4];
            for (int i = 0; i < 4; i++)
            {
                address[i] = (byte)digits(parts[i], 255, text);
            }
        }
        try
        {
            return new InetSocketAddress(InetAddress.getByAddress(address), port);
        }
        catch (final UnknownHostException ex)
        {
            throw new IllegalArgumentException("rdma address '" + text + "': " + ex.getMessage(), ex);
        }
    }

    private static int digits(final String s, final int max, final String text)
    {
        if (s.isEmpty() || s.length() > 5 || s.length() > 1 && s.charAt(0) == '0')
        {
            throw new IllegalArgumentException("rdma address '" + text + "' has the number '" + s + "'");
        }
        int value = 0;
        for (int i = 0; i < s.length(); i++)
        {
            final char c = s.charAt(i);
            if (c < '0' || c > '9')
            {
                throw new IllegalArgumentException("rdma address '" + text + "' is not a literal IP address and port " +
                    "(host names are not resolved)");
            }
            value = value * 10 + c - '0';
        }
        if (value > max)
        {
            throw new IllegalArgumentException("rdma address '" + text + "' has the number " + value);
        }
        return value;
    }

    /** A literal IPv6 address (groups of hex digits, one "::" at most, no zone, no embedded IPv4). */
    private static byte[] ipv6(final String s, final String text)
    {
        final String bad = "rdma address '" + text + "' does not hold a literal IPv6 address in its brackets";
        final int gap = s.indexOf("::");
        if (s.isEmpty() || gap >= 0 && s.indexOf("::", gap + 1) >= 0)
        {
            throw new IllegalArgumentException(bad);
        }
        final String[] head = gap < 0 ? s.split(":", -1) : s.substring(0, gap).isEmpty() ? new String[0] :
            s.substring(0, gap).split(":", -1);
        final String[] tail = gap < 0 ? new String[0] : s.substring(gap + 2).isEmpty() ? new String[0] :
            s.substring(gap + 2).split(":", -1);
        if (gap < 0 && head.length != 8 || gap >= 0 && head.length + tail.length > 7)
        {
            throw new IllegalArgumentException(bad);
        }
        final byte[] address = new byte[16];
        for (int i = 0; i < head.length; i++)
        {
            putGroup(address, i, head[i], bad);
        }
        for (int i = 0; i < tail.length; i++)
        {
            putGroup(address, 8 - tail.length + i, tail[i], bad);
        }
        return address;
    }

    private static void putGroup(final byte[] address, final int index, final String group, final String bad)
    {
        if (group.isEmpty() || group.length() > 4)
        {
            throw new IllegalArgumentException(bad);
        }
        int value = 0;
        for (int i = 0; i < group.length(); i++)
        {
            final int digit = Character.digit(group.charAt(i), 16);
            if (digit < 0)
            {
                throw new IllegalArgumentException(bad);
            }
            value = value << 4 | digit;
        }
        address[2 * index] = (byte)(value >>> 8);
        address[2 * index + 1] = (byte)value;
    }

    /** @return the literal text of an rdma endpoint, as {@link #rdmaEndpoint} parses it. */
    static String rdmaText(final InetSocketAddress endpoint)
    {
        final String host = endpoint.getAddress().getHostAddress();
        final int zone = host.indexOf('%');
        final String literal = zone < 0 ? host : host.substring(0, zone);
        return (literal.indexOf(':') >= 0 ? "[" + literal + "]" : literal) + ":" + endpoint.getPort();
    }

    static ByteBuffer claimed(final byte[] ticket, final byte[] claimNonce, final byte[] key)
    {
        return header(CLAIMED_LENGTH, CLAIMED).put(mac(key, CLAIMED_LABEL, ticket, claimNonce)).flip();
    }

    /** @return true if the message is a CLAIMED whose proof holds for this ticket, nonce and key. */
    static boolean claimedVerifies(final ByteBuffer message, final byte[] ticket, final byte[] claimNonce, final byte[] key)
    {
        if (message.remaining() != CLAIMED_LENGTH)
        {
            return false;
        }
        final byte[] proof = new byte[PROOF_LENGTH];
        message.duplicate().position(message.position() + HEADER_LENGTH).get(proof);
        return MessageDigest.isEqual(mac(key, CLAIMED_LABEL, ticket, claimNonce), proof);
    }

    static ByteBuffer refused(final String reason)
    {
        final byte[] text = ascii(reason.length() > MAX_STRING ? reason.substring(0, MAX_STRING) : reason);
        return header(HEADER_LENGTH + 2 + text.length, REFUSED).putShort((short)text.length).put(text).flip();
    }

    /** @return a REFUSED message's reason, made printable; a malformed one says so. */
    static String refusedReason(final ByteBuffer message)
    {
        final ByteBuffer b = message.slice().order(ByteOrder.LITTLE_ENDIAN);
        if (b.remaining() < HEADER_LENGTH + 2)
        {
            return "(malformed refusal)";
        }
        final int length = b.getShort(HEADER_LENGTH) & 0xFFFF;
        if (length > MAX_STRING || length > b.remaining() - HEADER_LENGTH - 2)
        {
            return "(malformed refusal)";
        }
        final StringBuilder text = new StringBuilder(length);
        for (int i = 0; i < length; i++)
        {
            final int c = b.get(HEADER_LENGTH + 2 + i);
            text.append(c >= 0x20 && c <= 0x7E ? (char)c : '?');
        }
        return text.toString();
    }

    private static String string(final ByteBuffer b, final String what)
    {
        if (b.remaining() < 2)
        {
            throw new IllegalArgumentException("offer ends before its " + what);
        }
        final int length = b.getShort() & 0xFFFF;
        if (length > MAX_STRING || length > b.remaining())
        {
            throw new IllegalArgumentException(what + " of " + length + " bytes exceeds the offer or the limit of " +
                MAX_STRING);
        }
        final byte[] bytes = new byte[length];
        b.get(bytes);
        for (final byte c : bytes)
        {
            if (c < 0x20 || c > 0x7E)
            {
                throw new IllegalArgumentException(what + " holds a byte that is not printable US-ASCII");
            }
        }
        return new String(bytes, StandardCharsets.US_ASCII);
    }

    /** A name in the shm directory: the shm fabric's alphabet, not hidden, no separators. */
    static void checkName(final String name, final String what)
    {
        if (name.isEmpty() || name.length() > 64 || name.startsWith("."))
        {
            throw new IllegalArgumentException(what + " '" + name + "' is not a name of 1..64 characters");
        }
        for (int i = 0; i < name.length(); i++)
        {
            final char c = name.charAt(i);
            if (!(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.'))
            {
                throw new IllegalArgumentException(what + " '" + name + "' holds '" + c +
                    "'; only letters, digits, '-', '_' and '.'");
            }
        }
    }

    private static byte[] ascii(final String s)
    {
        return s.getBytes(StandardCharsets.US_ASCII);
    }

    static byte[] mac(final byte[] key, final byte[] label, final byte[]... parts)
    {
        try
        {
            final Mac mac = Mac.getInstance("HmacSHA256");
            mac.init(new SecretKeySpec(key, "HmacSHA256"));
            mac.update(label);
            for (final byte[] part : parts)
            {
                mac.update(part);
            }
            return Arrays.copyOf(mac.doFinal(), PROOF_LENGTH);
        }
        catch (final GeneralSecurityException ex)
        {
            throw new IllegalStateException("HmacSHA256 is required of every JVM", ex);
        }
    }
}
