package io.reverb.rpc.retry;

import io.reverb.rpc.Status;

/**
 * The local cause the runtime attaches to a failed call's {@link Status} to say, structurally, how far the call
 * got: a balancing channel reads it (never the status description) to decide whether the call may be retried
 * without the user's consent, and whether the replica should be treated as unreachable. Like every status cause it
 * stays on this side: nothing of it goes on the wire. The {@link Reason#REFUSED_BY_SERVER} reason comes from a flag
 * the server sets on the STATUS frame of a call it refused before any handler ran.
 *
 * <p>Carries no stack trace; the shared instances of {@link #of(Reason)} are immutable (their cause is fixed at
 * construction and suppression is disabled).
 */
public final class CallFailureCause extends RuntimeException
{
    private static final long serialVersionUID = 1L;
    /** How many causes deep {@link #find(Status)} looks. */
    private static final int MAX_DEPTH = 8;
    private static final CallFailureCause[] SHARED = new CallFailureCause[Reason.values().length];

    static
    {
        for (final Reason reason : Reason.values())
        {
            SHARED[reason.ordinal()] = new CallFailureCause(reason, null);
        }
    }

    /**
     * Why a call failed, as far as the transport side knows.
     */
    public enum Reason
    {
        /** No connection could be made to send the call on: the server never saw it. */
        CONNECT_FAILED(AttemptFailure.NOT_SENT),
        /** The channel (or the subchannel picked) was closed before the call was sent. */
        CHANNEL_CLOSED(AttemptFailure.NOT_SENT),
        /** The server sent GOAWAY with a last stream id below the call's: it did not process the call. */
        GOAWAY(AttemptFailure.REFUSED),
        /**
         * The server refused the call before any handler ran (its per-connection call limit, or it is shutting
         * down), flagged {@code REFUSED} on the STATUS frame.
         */
        REFUSED_BY_SERVER(AttemptFailure.REFUSED),
        /** The connection died while the call was out: the server may have run it. */
        CONNECTION_LOST(AttemptFailure.PROCESSED);

        private final AttemptFailure failure;

        Reason(final AttemptFailure failure)
        {
            this.failure = failure;
        }

        /**
         * @return how far a call failing for this reason got.
         */
        public AttemptFailure attemptFailure()
        {
            return failure;
        }
    }

    private final Reason reason;

    private CallFailureCause(final Reason reason, final Throwable cause)
    {
        super(reason.name(), cause, false, false);
        this.reason = reason;
    }

    /**
     * @param reason why.
     * @return the shared cause for the reason.
     */
    public static CallFailureCause of(final Reason reason)
    {
        return SHARED[reason.ordinal()];
    }

    /**
     * @param reason why.
     * @param cause  the underlying failure (e.g. the connect error), or null.
     * @return a cause wrapping it.
     */
    public static CallFailureCause of(final Reason reason, final Throwable cause)
    {
        return cause == null ? of(reason) : new CallFailureCause(reason, cause);
    }

    /**
     * @param status a failed call's status.
     * @return the cause the runtime attached, or null when there is none (the call failed in the usual way).
     */
    public static CallFailureCause find(final Status status)
    {
        Throwable t = status.cause();
        for (int depth = 0; t != null && depth < MAX_DEPTH; depth++)
        {
            if (t instanceof CallFailureCause)
            {
                return (CallFailureCause)t;
            }
            t = t.getCause();
        }
        return null;
    }

    /**
     * @param status a failed call's status.
     * @return how far the call got: {@link AttemptFailure#PROCESSED} unless the runtime said otherwise.
     */
    public static AttemptFailure attemptFailure(final Status status)
    {
        final CallFailureCause cause = find(status);
        return cause == null ? AttemptFailure.PROCESSED : cause.reason.attemptFailure();
    }

    /**
     * @return why the call failed.
     */
    public Reason reason()
    {
        return reason;
    }
}
