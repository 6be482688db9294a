package io.reverb.rdma.provider.tcp;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.SelectableChannel;

/**
 * The byte stream under one tcp QP, once its handshake is done: every read and write of a {@link TcpQueuePair}
 * goes through here, so a link can add a layer (TLS over {@code SSLEngine}) without the QP knowing. All calls are
 * non-blocking. Reads and writes are made by one thread at a time (the QP serialises them), never concurrently
 * with each other.
 *
 * <p>A layered link may hold bytes of its own: ciphertext not yet on the socket ({@link #flush()} answers false
 * until it is, and the QP waits for the socket to be writable) or plaintext already decoded
 * ({@link #hasBufferedInput()}: the QP reads again without waiting for the socket to be readable).
 */
interface TcpLink
{
    /** @return the socket, for the NIC's selector */
    SelectableChannel selectable();

    /**
     * Reads what is available into {@code dsts}, in order.
     *
     * @return bytes read (0 if none is available now), or -1 at the peer's end of stream
     */
    long read(ByteBuffer[] dsts, int offset, int length) throws IOException;

    /**
     * Reads what is available into {@code dst}.
     *
     * @return bytes read (0 if none is available now), or -1 at the peer's end of stream
     */
    int read(ByteBuffer dst) throws IOException;

    /**
     * Writes as much of {@code srcs} as the link takes now, in order (a gathering write).
     *
     * @return bytes of {@code srcs} taken; a layered link may hold some of them until {@link #flush()}
     */
    long write(ByteBuffer[] srcs, int offset, int length) throws IOException;

    /** @return true if nothing the link itself holds is still to be written to the socket */
    boolean flush() throws IOException;

    /** @return true if bytes can be read now without the socket being readable (a layer decoded them) */
    boolean hasBufferedInput();

    /** Ends this side's output (the peer sees end of stream once everything before is read). */
    void shutdownOutput() throws IOException;

    /** Closes the socket. */
    void close() throws IOException;
}
