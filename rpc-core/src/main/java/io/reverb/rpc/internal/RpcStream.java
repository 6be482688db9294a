package io.reverb.rpc.internal;

import io.reverb.rpc.Status;
import java.nio.ByteBuffer;

/**
 * One call on one side of a connection: the frames for its stream id are dispatched here, on the transport's
 * thread. What a call writes is separate: a call may also implement {@link OutboundFrame} for the one frame it
 * writes exactly once (the client's CALL with its request, the server's final response with its STATUS).
 */
abstract class RpcStream
{
    /** The stream id; assigned when the call is registered with its connection. */
    int streamId;
    /**
     * Frames of this call waiting in the server's {@link InflationLane} (0 on a client): written under the lane's
     * monitor, read by the transport's thread, which sends a later frame of the call after them while it is not 0.
     */
    volatile int inflationPending;

    /**
     * On the transport's thread, for every MESSAGE before anything of it is read: counts it against the credit this
     * side granted the peer (the one message it may send first, then what REQUEST_N allowed).
     *
     * @return false if the peer sent more than it was granted: a protocol error.
     */
    boolean takeCredit()
    {
        return true;
    }

    /** @return the messages granted the peer so far, for the protocol error's words. */
    long creditGranted()
    {
        return Long.MAX_VALUE;
    }

    /**
     * @param payload    position..limit is the message; valid only during the call.
     * @param endOfStream the peer sends no more messages.
     */
    abstract void onMessage(ByteBuffer payload, boolean endOfStream);

    /**
     * A message longer than the inbound limit arrived (and was skipped).
     *
     * @param length its length.
     * @param limit  the limit.
     */
    abstract void onOversizedMessage(int length, int limit);

    /**
     * A message arrived that cannot be read: compressed with a codec this side does not have, inflating past the
     * inbound limit, or corrupt. The call ends with the status; the connection goes on.
     *
     * @param status what the call ends with (UNIMPLEMENTED, INTERNAL or RESOURCE_EXHAUSTED).
     */
    abstract void onUndecodableMessage(Status status);

    /**
     * @param n more messages the peer wants; Integer.MAX_VALUE for unbounded.
     */
    abstract void onRequestN(int n);

    /**
     * The connection closed or failed under the call.
     *
     * @param status what to end the call with.
     */
    abstract void onConnectionClosed(Status status);

    /**
     * A frame of ours could not be written.
     *
     * @param status why.
     */
    abstract void onWriteFailed(Status status);

    static long addCap(final long a, final long b)
    {
        final long r = a + b;
        return r < 0 ? Long.MAX_VALUE : r;
    }

    /** REQUEST_N value for demand n: Integer.MAX_VALUE means unbounded. */
    static int toWire(final long n)
    {
        return n >= Integer.MAX_VALUE ? Integer.MAX_VALUE : (int)n;
    }

    static long fromWire(final int n)
    {
        return n == Integer.MAX_VALUE ? Long.MAX_VALUE : n;
    }
}
