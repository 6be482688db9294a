package io.reverb.rdma.engine;

/**
 * The peer refused one message (it exceeds the peer's inbound limit). The connection stays usable.
 */
public class MessageRefusedException extends EngineException
{
    private static final long serialVersionUID = 1L;

    private final long limit;

    /** @param message what happened. @param limit the peer's limit in bytes. */
    public MessageRefusedException(final String message, final long limit)
    {
        super(message);
        this.limit = limit;
    }

    /** @return the peer's maxInboundMessageSize. */
    public long limit()
    {
        return limit;
    }
}
