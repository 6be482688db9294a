package io.reverb.rpc.testing;

import io.reverb.rpc.transport.Connection;
import io.reverb.rpc.transport.ConnectionHandler;
import java.nio.ByteBuffer;
import java.util.concurrent.CompletableFuture;

/**
 * The handler of a raw transport connection a test writes frames on by hand (malformed, random): it ignores what
 * the peer sends and completes {@link #closed()} with the close's cause.
 */
public final class RawConnectionHandler implements ConnectionHandler
{
    private final CompletableFuture<Throwable> closed = new CompletableFuture<>();

    /**
     * @return completed with the cause (null for an orderly close) when the connection closed.
     */
    public CompletableFuture<Throwable> closed()
    {
        return closed;
    }

    @Override
    public void onMessage(final Connection connection, final ByteBuffer message)
    {
    }

    @Override
    public void onWritable(final Connection connection)
    {
    }

    @Override
    public void onClose(final Connection connection, final Throwable cause)
    {
        closed.complete(cause);
    }
}
