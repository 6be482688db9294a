package io.reverb.rpc;

import java.util.Objects;

/**
 * The status a call ends with: a {@link StatusCode}, an optional human-readable description that travels
 * to the peer, and an optional local cause that never does (no stack trace goes on the wire).
 *
 * <p>Immutable; the {@code with*} methods return new instances.
 */
public final class Status
{
    private static final Status[] BY_CODE = new Status[StatusCode.values().length];

    static
    {
        for (final StatusCode code : StatusCode.values())
        {
            BY_CODE[code.ordinal()] = new Status(code, null, null);
        }
    }

    /** The call succeeded. */
    public static final Status OK = fromCode(StatusCode.OK);
    /** See {@link StatusCode#CANCELLED}. */
    public static final Status CANCELLED = fromCode(StatusCode.CANCELLED);
    /** See {@link StatusCode#UNKNOWN}. */
    public static final Status UNKNOWN = fromCode(StatusCode.UNKNOWN);
    /** See {@link StatusCode#INVALID_ARGUMENT}. */
    public static final Status INVALID_ARGUMENT = fromCode(StatusCode.INVALID_ARGUMENT);
    /** See {@link StatusCode#DEADLINE_EXCEEDED}. */
    public static final Status DEADLINE_EXCEEDED = fromCode(StatusCode.DEADLINE_EXCEEDED);
    /** See {@link StatusCode#NOT_FOUND}. */
    public static final Status NOT_FOUND = fromCode(StatusCode.NOT_FOUND);
    /** See {@link StatusCode#ALREADY_EXISTS}. */
    public static final Status ALREADY_EXISTS = fromCode(StatusCode.ALREADY_EXISTS);
    /** See {@link StatusCode#PERMISSION_DENIED}. */
    public static final Status PERMISSION_DENIED = fromCode(StatusCode.PERMISSION_DENIED);
    /** See {@link StatusCode#RESOURCE_EXHAUSTED}. */
    public static final Status RESOURCE_EXHAUSTED = fromCode(StatusCode.RESOURCE_EXHAUSTED);
    /** See {@link StatusCode#FAILED_PRECONDITION}. */
    public static final Status FAILED_PRECONDITION = fromCode(StatusCode.FAILED_PRECONDITION);
    /** See {@link StatusCode#ABORTED}. */
    public static final Status ABORTED = fromCode(StatusCode.ABORTED);
    /** See {@link StatusCode#OUT_OF_RANGE}. */
    public static final Status OUT_OF_RANGE = fromCode(StatusCode.OUT_OF_RANGE);
    /** See {@link StatusCode#UNIMPLEMENTED}. */
    public static final Status UNIMPLEMENTED = fromCode(StatusCode.UNIMPLEMENTED);
    /** See {@link StatusCode#INTERNAL}. */
    public static final Status INTERNAL = fromCode(StatusCode.INTERNAL);
    /** See {@link StatusCode#UNAVAILABLE}. */
    public static final Status UNAVAILABLE = fromCode(StatusCode.UNAVAILABLE);
    /** See {@link StatusCode#DATA_LOSS}. */
    public static final Status DATA_LOSS = fromCode(StatusCode.DATA_LOSS);
    /** See {@link StatusCode#UNAUTHENTICATED}. */
    public static final Status UNAUTHENTICATED = fromCode(StatusCode.UNAUTHENTICATED);

    private final StatusCode code;
    private final String description;
    private final Throwable cause;

    private Status(final StatusCode code, final String description, final Throwable cause)
    {
        this.code = Objects.requireNonNull(code, "code");
        this.description = description;
        this.cause = cause;
    }

    /**
     * @param code a code.
     * @return the shared status for the code, without description or cause.
     */
    public static Status fromCode(final StatusCode code)
    {
        final Status status = BY_CODE[code.ordinal()];
        return status != null ? status : new Status(code, null, null);
    }

    /**
     * @param value a code's number.
     * @return the shared status for it ({@link #UNKNOWN} if out of range).
     */
    public static Status fromCodeValue(final int value)
    {
        return fromCode(StatusCode.fromValue(value));
    }

    /**
     * The status a throwable stands for: its own if it is an {@link RpcException}, otherwise UNKNOWN with the
     * throwable's message as description (never its stack trace) and the throwable as local cause.
     *
     * @param t any throwable.
     * @return its status.
     */
    public static Status fromThrowable(final Throwable t)
    {
        Throwable current = t;
        while (current != null)
        {
            if (current instanceof RpcException)
            {
                return ((RpcException)current).status();
            }
            current = current.getCause();
        }
        final String message = t.getMessage();
        return UNKNOWN.withDescription(message != null ? message : t.getClass().getName()).withCause(t);
    }

    /**
     * @return the code.
     */
    public StatusCode code()
    {
        return code;
    }

    /**
     * @return the description sent to the peer, or null.
     */
    public String description()
    {
        return description;
    }

    /**
     * @return the local cause, never sent on the wire, or null.
     */
    public Throwable cause()
    {
        return cause;
    }

    /**
     * @return true if the code is {@link StatusCode#OK}.
     */
    public boolean isOk()
    {
        return code == StatusCode.OK;
    }

    /**
     * @param description the new description.
     * @return a copy with the description replaced.
     */
    public Status withDescription(final String description)
    {
        return Objects.equals(this.description, description) ? this : new Status(code, description, cause);
    }

    /**
     * @param additional text to append on a new line to the existing description.
     * @return a copy with the description augmented.
     */
    public Status augmentDescription(final String additional)
    {
        if (additional == null)
        {
            return this;
        }
        return withDescription(description == null ? additional : description + "\n" + additional);
    }

    /**
     * @param cause the local cause.
     * @return a copy with the cause replaced.
     */
    public Status withCause(final Throwable cause)
    {
        return this.cause == cause ? this : new Status(code, description, cause);
    }

    /**
     * @return an exception carrying this status and empty trailers.
     */
    public RpcException asException()
    {
        return new RpcException(this, null);
    }

    /**
     * @param trailers trailers to carry, may be null.
     * @return an exception carrying this status and the trailers.
     */
    public RpcException asException(final Metadata trailers)
    {
        return new RpcException(this, trailers);
    }

    @Override
    public boolean equals(final Object o)
    {
        if (this == o)
        {
            return true;
        }
        if (!(o instanceof Status))
        {
            return false;
        }
        final Status that = (Status)o;
        return code == that.code && Objects.equals(description, that.description) && Objects.equals(cause, that.cause);
    }

    @Override
    public int hashCode()
    {
        return Objects.hash(code, description);
    }

    @Override
    public String toString()
    {
        return "Status{code=" + code + (description != null ? ", description=" + description : "") +
            (cause != null ? ", cause=" + cause : "") + "}";
    }
}
