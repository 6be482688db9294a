package io.reverb.rdma.engine;

import org.agrona.concurrent.UnsafeBuffer;

/**
 * The acceptor's side of authentication (see {@code Handshake}): holds a new connection back until the
 * connector's first batch opens with a valid proof of its token. Until then the connection has delivered
 * nothing, sent nothing and was passed to no one; the engine aborts it when its deadline passes.
 */
final class AuthGate
{
    /** Outcome callbacks, run on the thread that decided (poller or listener). */
    interface Outcome
    {
        void admitted(EngineConnection connection);

        void refused(EngineConnection connection, HandshakeException why);
    }

    private final long expected0;
    private final long expected1;
    private final long deadlineNanos;
    private final String remote;
    private final Outcome outcome;
    private boolean decided;

    /**
     * @param expectedProof the connector proof this side computed ({@link Handshake#connectorProof}).
     * @param deadlineNanos when an unproven connection is refused.
     * @param remote        the connector, for messages.
     * @param outcome       what to do with the decision.
     */
    AuthGate(final byte[] expectedProof, final long deadlineNanos, final String remote, final Outcome outcome)
    {
        final long[] words = Handshake.proofWords(expectedProof);
        this.expected0 = words[0];
        this.expected1 = words[1];
        this.deadlineNanos = deadlineNanos;
        this.remote = remote;
        this.outcome = outcome;
    }

    /**
     * Poller thread, on the first batch: checks that its control section opens with a valid proof.
     *
     * @param connection    the connection.
     * @param buffer        the receive buffer.
     * @param controlOffset where the batch's control section starts.
     * @param controlLength its length.
     * @return true if admitted (the batch may be processed, its AUTH frame is then ignored).
     */
    boolean admit(final EngineConnection connection, final UnsafeBuffer buffer, final int controlOffset, final int controlLength)
    {
        final boolean framed = controlLength >= Wire.CONTROL_FRAME_LENGTH &&
            buffer.getInt(controlOffset + ControlFrameFlyweight.TYPE_OFFSET) == Wire.CONTROL_AUTH;
        // Constant time: no early exit on the first differing byte.
        final long difference = (buffer.getLong(controlOffset + ControlFrameFlyweight.ID_OFFSET) ^ expected0) |
            (buffer.getLong(controlOffset + ControlFrameFlyweight.ADDRESS_OFFSET) ^ expected1);
        final boolean valid = framed && difference == 0;
        if (valid)
        {
            decide(connection, null);
            return true;
        }
        decide(connection, new HandshakeException(HandshakeException.Reason.AUTHENTICATION,
            "refused connection from " + remote + ": authentication token mismatch (its proof does not verify)"));
        return false;
    }

    /** @return true if undecided and past the deadline. */
    boolean expired(final long nowNanos)
    {
        synchronized (this)
        {
            return !decided && nowNanos - deadlineNanos >= 0;
        }
    }

    /**
     * Refuses the connection unless already decided.
     *
     * @param connection the connection.
     * @param why        the refusal.
     */
    void refuse(final EngineConnection connection, final HandshakeException why)
    {
        decide(connection, why);
    }

    private void decide(final EngineConnection connection, final HandshakeException refusal)
    {
        synchronized (this)
        {
            if (decided)
            {
                return;
            }
            decided = true;
        }
        if (refusal == null)
        {
            outcome.admitted(connection);
        }
        else
        {
            outcome.refused(connection, refusal);
        }
    }
}
