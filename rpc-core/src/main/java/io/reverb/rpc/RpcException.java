package io.reverb.rpc;

/**
 * The unchecked exception every failed call ends with, on the client ({@code onError} of the call's
 * {@code Mono}/{@code Flux}) and, thrown or emitted by a handler, on the server, where its status and
 * trailers are what the client receives.
 */
public class RpcException extends RuntimeException
{
    private static final long serialVersionUID = 1L;

    private final transient Status status;
    private final transient Metadata trailers;

    /**
     * @param status the status, not OK.
     */
    public RpcException(final Status status)
    {
        this(status, null);
    }

    /**
     * @param status   the status, not OK.
     * @param trailers trailers to send with (server) or received with (client) the status; may be null.
     */
    public RpcException(final Status status, final Metadata trailers)
    {
        super(message(status), status.cause());
        this.status = status;
        this.trailers = trailers != null ? trailers : new Metadata();
    }

    private static String message(final Status status)
    {
        return status.description() == null ? status.code().name() : status.code() + ": " + status.description();
    }

    /**
     * @return the status.
     */
    public Status status()
    {
        return status;
    }

    /**
     * @return the trailers, never null.
     */
    public Metadata trailers()
    {
        return trailers;
    }
}
