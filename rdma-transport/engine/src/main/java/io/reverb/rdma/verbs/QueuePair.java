package io.reverb.rdma.verbs;

import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import javax.net.ssl.SSLSession;

/**
 * An RC queue pair, connected through the context's connection manager.
 *
 * <p>Posting is thread-safe but not meant to be contended: the engine posts from its poller or
 * under its own lock. Failures of accepted requests arrive as completions with a non-SUCCESS
 * {@link WcStatus}; after the first error the QP is in {@link QpState#ERROR} and every other
 * outstanding or later request completes with {@link WcStatus#WR_FLUSH_ERR}.
 */
public interface QueuePair extends AutoCloseable
{
    /** @return local QP number (in completions' {@link WorkCompletions#qpNum(int)}). */
    int qpNum();

    /** @return current state. */
    QpState state();

    /** @return the PD. */
    ProtectionDomain pd();

    /** @return the send CQ. */
    CompletionQueue sendCq();

    /** @return the receive CQ. */
    CompletionQueue recvCq();

    /** @return private data the peer sent with its accept (for the connector) or request (for the acceptor); read-only. */
    ByteBuffer remotePrivateData();

    /** @return a human-readable peer address. */
    String remoteAddress();

    /**
     * The socket addresses of a queue pair that runs over one socket (the {@code tcp://} provider's): what a
     * {@code reverb://} claim binds to (its connection as each side's socket has it).
     *
     * @return {local, remote}, or null where there is no such socket.
     */
    default InetSocketAddress[] socketAddresses()
    {
        return null;
    }

    /**
     * This end's address as the peer names it ({@code ip:port}, the format of the peer's {@link #remoteAddress()}):
     * the socket's own over one socket; over {@code rdma://}, the connector's handshake socket's (the listener names
     * the connector by it). The default: the local socket address of {@link #socketAddresses()}, or null.
     *
     * @return the address, or null where this end has none a peer could name (shared memory).
     */
    default String localAddress()
    {
        final InetSocketAddress[] sockets = socketAddresses();
        final InetSocketAddress local = sockets == null ? null : sockets[0];
        return local == null || local.getAddress() == null ? null :
            local.getAddress().getHostAddress() + ":" + local.getPort();
    }

    /**
     * @return the TLS session of a queue pair that runs inside TLS (the {@code tcp://} provider's with a
     *         {@link TlsConfig}), once its handshake is done; or null.
     */
    default SSLSession sslSession()
    {
        return null;
    }

    /**
     * ibv_post_send. The request may be reused when this returns.
     *
     * @param request the work request.
     * @return {@link PostResult} code.
     */
    int postSend(SendRequest request);

    /**
     * ibv_post_recv. The request may be reused when this returns.
     *
     * @param request the work request.
     * @return {@link PostResult} code.
     */
    int postRecv(RecvRequest request);

    /**
     * Why the provider took this queue pair down itself (a broken completion queue or device), if it did. The
     * disconnect handler has then run, and the engine closes the connection with this cause rather than as a
     * peer that went away.
     *
     * @return the cause, or null (also for a peer's disconnect or an error completion, which say so themselves)
     */
    default Throwable failure()
    {
        return null;
    }

    /**
     * Whether this QP finishes a send work request inside {@link #postSend} (shm: the posting thread places the bytes
     * in the peer's memory before the call returns), and says so in {@link SendRequest#completedAtPost()}. A consumer
     * may then post a request unsignaled and count it complete as soon as the call returns with that flag set, with no
     * completion to reap (as scatter-to-CQE spares a NIC's consumer the receive copy, this spares the send CQ). A
     * request that fails still produces its error completion, signaled or not. RDMA hardware and tcp complete later:
     * false.
     *
     * @return true if {@link #postSend} reports synchronous completion in {@link SendRequest#completedAtPost()}.
     */
    default boolean completesAtPost()
    {
        return false;
    }

    /**
     * Whether this QP can {@link #mapRemote map} the peer's memory for this process's CPU to write into (a
     * provider whose peer lives on the same host, in memory this process can map: shm). An engine uses it to
     * serialise a large message straight into the receiver's granted buffer instead of having the fabric copy it
     * there; on RDMA hardware the NIC makes that copy without the CPU, so those providers answer false.
     *
     * @return true if {@link #mapRemote} is supported.
     */
    default boolean canMapRemote()
    {
        return false;
    }

    /**
     * Maps {@code [remoteAddress, remoteAddress + length)} of the peer's memory for direct writes, after the checks
     * an RDMA WRITE to it would make: {@code rkey} names a region of the peer's protection domain on the other end
     * of this QP that is registered with {@link Access#REMOTE_WRITE}, the address names the same region, and the
     * range lies inside it. The values usually come from the peer (a grant): every one is checked here.
     *
     * @param remoteAddress the peer's address.
     * @param rkey          the peer's remote key.
     * @param length        bytes, &gt; 0.
     * @return the mapping (close it when done), or null if a check fails, the QP is not connected or the provider
     * cannot map (see {@link #canMapRemote()}).
     */
    default RemoteMapping mapRemote(final long remoteAddress, final int rkey, final int length)
    {
        return null;
    }

    /**
     * rdma_disconnect: moves both sides to {@link QpState#ERROR}; outstanding requests on both sides
     * are flushed with WR_FLUSH_ERR and both disconnect handlers run. Idempotent.
     */
    void disconnect();

    /** Disconnects if needed and destroys the QP. Idempotent. */
    @Override
    void close();
}
