package io.reverb.rdma.engine;

/**
 * The connection went down without a graceful close: the peer process died, closed its engine, or
 * the fabric reported an error. Every message not known to be delivered fails with this.
 */
public class PeerDisconnectedException extends EngineException
{
    private static final long serialVersionUID = 1L;

    /** @param message what happened. */
    public PeerDisconnectedException(final String message)
    {
        super(message);
    }

    /** @param message what happened. @param cause underlying error. */
    public PeerDisconnectedException(final String message, final Throwable cause)
    {
        super(message, cause);
    }
}
