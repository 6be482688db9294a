package io.reverb.rdma.engine;

/**
 * Base of the engine's errors, as reported to {@link SendErrorHandler}s and close callbacks.
 */
public class EngineException extends RuntimeException
{
    private static final long serialVersionUID = 1L;

    /** @param message what happened and, where possible, what to do about it. */
    public EngineException(final String message)
    {
        super(message);
    }

    /** @param message what happened. @param cause underlying error. */
    public EngineException(final String message, final Throwable cause)
    {
        super(message, cause);
    }
}
