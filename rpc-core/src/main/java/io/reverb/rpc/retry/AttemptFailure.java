package io.reverb.rpc.retry;

/**
 * How far a failed attempt got, which decides whether it may be retried without the user's consent.
 */
public enum AttemptFailure
{
    /**
     * The call never left this client: no connection was ready, or the connection failed before the CALL frame was
     * written. The server cannot have seen it: always safe to retry, on another replica.
     */
    NOT_SENT,
    /**
     * The server refused the call before handing it to a handler: a GOAWAY whose last stream id is below the
     * call's, or a server already draining. Safe to retry on another replica.
     */
    REFUSED,
    /**
     * The server may have run the handler (the call failed with a status, or the connection died while it was out).
     * Only an idempotent call's {@link io.reverb.rpc.RetryPolicy} may retry it.
     */
    PROCESSED
}
