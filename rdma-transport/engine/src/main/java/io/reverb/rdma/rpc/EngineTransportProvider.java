package io.reverb.rdma.rpc;

import io.reverb.rpc.transport.Connection;
import io.reverb.rpc.transport.ConnectionHandler;
import io.reverb.rpc.transport.ResourceUsage;
import io.reverb.rpc.transport.ServerListener;
import io.reverb.rpc.transport.TransportOptions;
import io.reverb.rpc.transport.TransportProvider;
import java.io.IOException;
import java.net.URI;
import java.util.concurrent.CompletableFuture;

/**
 * What the rpc-core transports over the connection engine ({@code shm://}, {@code tcp://},
 * {@code rdma://}) have in common: each instance owns one {@link EngineTransport} for its scheme (its engines and
 * connections), and the subclasses only name the scheme.
 */
public abstract class EngineTransportProvider implements TransportProvider
{
    private final EngineTransport transport;

    EngineTransportProvider(final EngineTransport transport)
    {
        this.transport = transport;
    }

    @Override
    public final String scheme()
    {
        return transport.scheme();
    }

    @Override
    public final boolean isAvailable()
    {
        return unavailabilityCause() == null;
    }

    @Override
    public final String unavailabilityCause()
    {
        return transport.unavailabilityCause();
    }

    @Override
    public final CompletableFuture<Connection> connect(final URI uri, final ConnectionHandler handler)
    {
        return transport.connect(uri, TransportOptions.EMPTY, handler);
    }

    /**
     * Connects with the channel builder's options: {@link EngineOptions} choose the engine's settings, and the
     * address's {@code ?polling=} overrides that one field.
     */
    @Override
    public final CompletableFuture<Connection> connect(final URI uri, final TransportOptions options,
        final ConnectionHandler handler)
    {
        return transport.connect(uri, options, handler);
    }

    @Override
    public final ServerListener listen(final URI uri, final ServerListener.Acceptor acceptor) throws IOException
    {
        return transport.listen(uri, TransportOptions.EMPTY, acceptor);
    }

    /**
     * Listens with the server builder's options: {@link EngineOptions} choose the engine's settings, and the
     * address's {@code ?polling=} overrides that one field.
     */
    @Override
    public final ServerListener listen(final URI uri, final TransportOptions options,
        final ServerListener.Acceptor acceptor) throws IOException
    {
        return transport.listen(uri, options, acceptor);
    }

    /** @return this provider's transport (package-private seam for test hooks). */
    final EngineTransport transport()
    {
        return transport;
    }

    @Override
    public final ResourceUsage resourceUsage()
    {
        return transport.resourceUsage();
    }
}
