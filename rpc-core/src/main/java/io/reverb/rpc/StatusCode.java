package io.reverb.rpc;

/**
 * The outcome of a call, with gRPC's 17 codes and their stable numbers, so that a gRPC user reads them
 * the same way and they can be logged, compared and sent on the wire as integers.
 */
public enum StatusCode
{
    /** Not an error. */
    OK(0),
    /** The call was cancelled, typically by the caller. */
    CANCELLED(1),
    /** Unknown error, e.g. a handler threw an exception that carries no status. */
    UNKNOWN(2),
    /** The client gave an invalid argument. */
    INVALID_ARGUMENT(3),
    /** The deadline expired before the call completed. */
    DEADLINE_EXCEEDED(4),
    /** Some requested entity was not found. */
    NOT_FOUND(5),
    /** Some entity the client tried to create already exists. */
    ALREADY_EXISTS(6),
    /** The caller may not execute the operation. */
    PERMISSION_DENIED(7),
    /** Some resource has been exhausted, e.g. a message exceeded the inbound size limit. */
    RESOURCE_EXHAUSTED(8),
    /** The system is not in a state required for the operation. */
    FAILED_PRECONDITION(9),
    /** The operation was aborted, e.g. a concurrency conflict. */
    ABORTED(10),
    /** The operation was attempted past the valid range. */
    OUT_OF_RANGE(11),
    /** The operation, service or method is not implemented. */
    UNIMPLEMENTED(12),
    /** An invariant of the system is broken, e.g. a protocol violation. */
    INTERNAL(13),
    /** The service is unavailable, e.g. the connection failed or the server is shutting down. */
    UNAVAILABLE(14),
    /** Unrecoverable data loss or corruption. */
    DATA_LOSS(15),
    /** The request lacks valid authentication credentials. */
    UNAUTHENTICATED(16);

    private static final StatusCode[] BY_VALUE = values();

    private final int value;

    StatusCode(final int value)
    {
        this.value = value;
    }

    /**
     * @return the code's number, as on the wire and in gRPC.
     */
    public int value()
    {
        return value;
    }

    /**
     * @param value a code's number.
     * @return the code, or {@link #UNKNOWN} for a number outside 0..16 (as gRPC does).
     */
    public static StatusCode fromValue(final int value)
    {
        return value >= 0 && value < BY_VALUE.length ? BY_VALUE[value] : UNKNOWN;
    }

    /**
     * @return a {@link Status} with this code and no description.
     */
    public Status toStatus()
    {
        return Status.fromCode(this);
    }
}
