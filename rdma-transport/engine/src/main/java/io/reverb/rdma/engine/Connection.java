package io.reverb.rdma.engine;

import io.reverb.common.ClaimResult;
import io.reverb.common.WriteClaim;
import java.net.InetSocketAddress;
import java.util.concurrent.CompletableFuture;
import java.util.function.Consumer;
import javax.net.ssl.SSLSession;

/**
 * One engine connection: an RC queue pair with its receive slots, send ring, credits and
 * rendezvous pools. It moves framed messages; it knows nothing of RPC.
 *
 * <p><b>Sending</b> is thread-safe (many producers): {@link #tryClaim(int, WriteClaim)}, write,
 * {@link WriteClaim#commit()}. The claim object is rpc-core's {@link WriteClaim}, the same one its transport SPI
 * uses, so the RPC adapter hands its claim straight through. Messages committed by one thread arrive in that order
 * (in fact all messages arrive in commit order of their claims). The return codes are those of Aeron's
 * {@code Publication}: {@link #OK} or a negative code; nothing is thrown on the hot path.
 *
 * <p><b>Receiving</b> happens on the connection's poller thread through the {@link MessageHandler};
 * receive processing starts when the handler is set (set it in the accept callback, or right after
 * connect), so that no message is delivered to nobody.
 */
public interface Connection extends AutoCloseable
{
    // One set of result codes with rpc-core's transport SPI, so that its adapter passes them through.
    /** The claim succeeded. */
    int OK = ClaimResult.OK;
    /**
     * No room now (send ring full, credits exhausted, rendezvous pool exhausted, or, for a direct write over shm, the
     * receiver's grant not in yet: the first claim of a large message announces it); retry the same length, see
     * {@link #onWritable}.
     */
    int BACK_PRESSURED = ClaimResult.BACK_PRESSURED;
    /** The connection failed (peer gone); see the {@link #onClose} cause. */
    int NOT_CONNECTED = ClaimResult.NOT_CONNECTED;
    /** The connection is closing or closed. */
    int CLOSED = ClaimResult.CLOSED;
    /** Larger than this side's {@link EngineConfig#maxOutboundMessageSize()}. */
    int TOO_LARGE = ClaimResult.TOO_LARGE;

    /**
     * @param code a return code.
     * @return its name.
     */
    static String resultName(final int code)
    {
        return ClaimResult.toString(code);
    }

    /**
     * Claims room for one message of {@code length} bytes, for in-place serialization: on {@link #OK}, write
     * {@code length} bytes at {@link WriteClaim#buffer()} from {@link WriteClaim#offset()} (set the byte order you
     * write in: the view's order is not reset between claims), then {@link WriteClaim#commit()} or
     * {@link WriteClaim#abort()}, exactly once. An eager message is written straight into the registered send ring,
     * a larger one into a registered rendezvous buffer; either way the bytes are not copied again before the fabric
     * moves them. Allocation-free once the claim object has been used on this connection (its view of the send ring
     * is kept).
     *
     * <p>{@link WriteClaim#token()} is then the message's id, as later given to a {@link SendErrorHandler} if the
     * message fails. {@link WriteClaim#attachment(Object)}, set before the commit, is handed back to the
     * {@link SendErrorHandler} if the peer refuses the message (only a rendezvous message can be refused).
     * {@link WriteClaim#commit()} returns {@link #CLOSED} if this connection was closed (its close callbacks had
     * run) before the commit, else {@link #OK}; a committed message lost with the connection is also reported to
     * the {@link SendErrorHandler}. The engine keeps its own state of the claim in
     * {@link WriteClaim#transportState()}: do not set it while the claim is active.
     *
     * <p>A claim object is owned by one thread at a time; keep one per sending thread. Claims are short-lived: the
     * send ring cannot move past an open claim.
     *
     * @param length message length, &gt;= 0; above {@link #eagerLimit()} it goes by rendezvous.
     * @param claim  reusable claim to fill, not active.
     * @return {@link #OK} or a negative code.
     */
    int tryClaim(int length, WriteClaim claim);

    /**
     * Asks to be told, once, on a poller thread, when a sender that was back-pressured may retry.
     * The retry may be back-pressured again (then register again). Runs at once, on the calling
     * thread, if the connection is already closed (the retry then returns a closed code).
     *
     * @param callback what to run; must not block.
     */
    void onWritable(Runnable callback);

    /** @param handler receives every message, on the poller thread; setting it starts receiving. */
    void setHandler(MessageHandler handler);

    /**
     * Stops or resumes taking received messages. While paused nothing is delivered and no credits
     * return, so the peer is soon back-pressured (flow control; also how tests simulate a hung peer).
     *
     * @param paused true to pause.
     */
    void pauseReceiving(boolean paused);

    /** @param handler told about committed messages that will not be delivered. */
    void setSendErrorHandler(SendErrorHandler handler);

    /**
     * @param callback run once when the connection is closed: with null after a graceful close, with
     *                 the cause after a failure. Runs at once if already closed.
     */
    void onClose(Consumer<Throwable> callback);

    /**
     * Keeps the message being delivered beyond {@link MessageHandler#onMessage}. Only valid during
     * that call, on the poller thread. A rendezvous message is kept in place (its buffer is not
     * returned to the pool until released); an eager message is copied (allocates).
     *
     * @return the retained message; release it exactly once.
     * @throws IllegalStateException if called outside {@link MessageHandler#onMessage}.
     */
    RetainedMessage retain();

    /** @return true while sends are possible. */
    boolean isConnected();

    /** @return true once the close callbacks ran. */
    boolean isClosed();

    /**
     * Starts a graceful close: new claims return {@link #CLOSED}, committed messages and rendezvous
     * in flight are completed, then both sides exchange CLOSE and disconnect.
     *
     * @return completes when closed (also exceptionally, if it failed instead).
     */
    CompletableFuture<Void> closeAsync();

    /**
     * Graceful close, waiting up to {@link EngineConfig#closeTimeoutNanos()} (not waiting when called from a poller
     * thread, nor from a listener's accept callback: the connection is polled once it returns). A connection closed
     * before it was given a handler drops what arrives. Never throws.
     */
    @Override
    void close();

    /**
     * Tears the connection down at once, without draining or a CLOSE exchange (the peer sees a
     * disconnect). Pending sends fail with the cause; close callbacks get it.
     *
     * @param cause why; reported locally.
     */
    void abort(Throwable cause);

    /** @return the peer's address. */
    String remoteAddress();

    /**
     * @return {local, remote} socket addresses of a connection over one socket ({@code tcp://}), or null (other
     *         fabrics, or before the connection is up).
     */
    default InetSocketAddress[] socketAddresses()
    {
        return null;
    }

    /**
     * @return this end's address as the peer names it ({@code ip:port}, see {@code QueuePair.localAddress}), or null
     *         (shared memory, or before the connection is up).
     */
    default String localAddress()
    {
        return null;
    }

    /**
     * @return the TLS session of a connection inside TLS ({@code tcp://} with {@link EngineConfig#tls}), its handshake
     *         done: the peer's certificates, the protocol and cipher suite; or null (no TLS, other fabrics, or before
     *         the connection is up).
     */
    default SSLSession sslSession()
    {
        return null;
    }

    /** @return largest payload sent eagerly on this connection (the smaller of both sides' limits). */
    int eagerLimit();

    /** @return the peer's maxInboundMessageSize, from the handshake. */
    int peerMaxInboundMessageSize();

    /**
     * Lowers the largest message this side accepts on this connection below the engine's
     * {@link EngineConfig#maxInboundMessageSize()} (it never raises it): a larger announced message is refused
     * before any memory is reserved for it, and fails at the sender with {@link MessageRefusedException}. Call it
     * before messages flow: in the listener's accept callback (which runs before the connection is polled), or
     * right after connecting. The RPC layer passes its own {@code maxInboundMessageSize} this way.
     *
     * @param bytes the limit, &gt;= 0.
     */
    void limitInboundMessageSize(int bytes);

    /** @return receives this side keeps posted (the peer's credit window). */
    int receiveSlots();

    /** @return receives the peer keeps posted (this side's credit window). */
    int peerReceiveSlots();

    /** @return SENDs this side may still post (a snapshot). */
    int creditsAvailable();

    /** @return re-posted receives not yet announced to the peer (a snapshot). */
    int creditsOwed();

    /** @return rendezvous buffers (both directions, including retained ones) not yet back in their pools. */
    int poolBuffersInUse();

    /** @return rendezvous registered bytes handed out (both directions). */
    long poolBytesInUse();

    /** @return send-ring bytes claimed, committed or in flight and not yet completed (0 when idle). */
    long sendBytesInFlight();

    /** @return outgoing rendezvous not yet completed plus incoming ones granted or queued. */
    int pendingRendezvous();

    /** @return incoming rendezvous requests waiting for a pool buffer. */
    int queuedRendezvousRequests();

    /** @return counters of this connection. */
    ConnectionStats stats();
}
