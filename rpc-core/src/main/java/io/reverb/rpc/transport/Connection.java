package io.reverb.rpc.transport;

import io.reverb.common.ClaimResult;
import io.reverb.common.WriteClaim;
import java.util.Locale;
import javax.net.ssl.SSLSession;

/**
 * A transport connection: reliable, ordered, message-oriented, bidirectional. See the package documentation for
 * the contract.
 */
public interface Connection
{
    /**
     * Claims space for one outbound message of exactly {@code length} bytes. On {@link ClaimResult#OK} the claim is
     * wrapped around the space and must be committed or aborted. Thread-safe.
     *
     * @param length message length in bytes, at least 1.
     * @param claim  the caller's claim object, not active.
     * @return {@link ClaimResult#OK}, {@link ClaimResult#BACK_PRESSURED} (then {@link ConnectionHandler#onWritable}
     * follows), {@link ClaimResult#CLOSED}, {@link ClaimResult#NOT_CONNECTED} (failed; treated as CLOSED) or
     * {@link ClaimResult#TOO_LARGE}.
     */
    int tryClaim(int length, WriteClaim claim);

    /**
     * @return the longest message {@link #tryClaim} accepts.
     */
    int maxMessageLength();

    /**
     * Graceful close: committed messages are still delivered, then both ends' handlers see
     * {@link ConnectionHandler#onClose}. Idempotent.
     */
    void close();

    /**
     * @return false once closing began (locally or by the peer).
     */
    boolean isOpen();

    /**
     * @return this end's address, for logs and {@code RpcContext.peer()}.
     */
    String localAddress();

    /**
     * @return the peer's address.
     */
    String remoteAddress();

    /**
     * @return the TLS session this connection runs inside, its handshake done (the peer's certificates, the protocol
     *         and cipher suite), or null: no TLS, or a transport that has none. The default: null.
     */
    default SSLSession sslSession()
    {
        return null;
    }

    /**
     * Whether this connection calls {@link ConnectionHandler#onReadComplete} after each batch of inbound messages it
     * delivers. A handler may then hold work back until the end of the batch; one whose transport never calls it must
     * not. The default: false.
     *
     * @return true if {@link ConnectionHandler#onReadComplete} follows every batch of {@link ConnectionHandler#onMessage}.
     */
    default boolean signalsReadComplete()
    {
        return false;
    }

    /**
     * The fabric this connection runs over, as the scheme of a Reverb address: {@code "shm"}, {@code "tcp"},
     * {@code "rdma"}, {@code "inproc"}. A {@code reverb://} connection reports the fabric it settled on, never
     * {@code "reverb"}. The default: the scheme of {@link #localAddress()}, or {@code "unknown"} if it has none.
     *
     * @return the fabric's scheme, lower case.
     */
    default String fabric()
    {
        final String local = localAddress();
        final int end = local == null ? -1 : local.indexOf("://");
        return end > 0 ? local.substring(0, end).toLowerCase(Locale.ROOT) : "unknown";
    }

    /**
     * @return resources this connection holds now.
     */
    ResourceUsage resourceUsage();
}
