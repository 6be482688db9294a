package io.reverb.rpc.wire;

/**
 * A peer sent something that breaks the protocol: the connection it came on is closed.
 */
public final class ProtocolException extends Exception
{
    private static final long serialVersionUID = 1L;

    /**
     * @param message what was wrong.
     */
    public ProtocolException(final String message)
    {
        super(message, null, false, false);
    }
}
