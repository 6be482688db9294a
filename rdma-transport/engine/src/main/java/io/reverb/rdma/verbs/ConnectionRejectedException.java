package io.reverb.rdma.verbs;

import java.io.IOException;
import java.nio.ByteBuffer;

/**
 * The peer answered a connect with rdma_reject.
 */
public class ConnectionRejectedException extends IOException
{
    private static final long serialVersionUID = 1L;

    private final transient ByteBuffer privateData;

    /**
     * @param message     what happened.
     * @param privateData the reject's private data (copied), or null.
     */
    public ConnectionRejectedException(final String message, final ByteBuffer privateData)
    {
        super(message);
        if (privateData == null)
        {
            this.privateData = ByteBuffer.allocate(0).asReadOnlyBuffer();
        }
        else
        {
            final ByteBuffer copy = ByteBuffer.allocate(privateData.remaining());
            copy.put(privateData.duplicate()).flip();
            this.privateData = copy.asReadOnlyBuffer();
        }
    }

    /** @return the reject's private data (read-only, possibly empty). */
    public ByteBuffer privateData()
    {
        return privateData.duplicate();
    }
}
