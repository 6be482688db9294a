package io.reverb.rdma.engine;

import static io.reverb.rdma.engine.EngineTestSupport.*;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;

/** Two engines in this process, one connection between them, over shm unless a fabric is named. */
final class EnginePair implements AutoCloseable
{
    final RdmaEngine serverEngine;
    final RdmaEngine clientEngine;
    final EngineListener listener;
    final Connection client;
    final Connection server;
    final List<Throwable> errors = new ArrayList<>();

    EnginePair(final EngineConfig serverConfig, final EngineConfig clientConfig, final MessageHandler serverHandler)
        throws Exception
    {
        this(EngineFabric.SHM, serverConfig, clientConfig, c -> c.setHandler(serverHandler));
    }

    EnginePair(final EngineConfig serverConfig, final EngineConfig clientConfig, final Consumer<Connection> onAccept)
        throws Exception
    {
        this(EngineFabric.SHM, serverConfig, clientConfig, onAccept);
    }

    EnginePair(final EngineFabric fabric, final EngineConfig serverConfig, final EngineConfig clientConfig,
        final MessageHandler serverHandler) throws Exception
    {
        this(fabric, serverConfig, clientConfig, c -> c.setHandler(serverHandler));
    }

    EnginePair(final EngineFabric fabric, final EngineConfig serverConfig, final EngineConfig clientConfig,
        final Consumer<Connection> onAccept) throws Exception
    {
        serverConfig.errorHandler(this::onError);
        clientConfig.errorHandler(this::onError);
        serverEngine = RdmaEngine.open(fabric.scheme(), serverConfig.name("server"));
        clientEngine = RdmaEngine.open(fabric.scheme(), clientConfig.name("client"));
        final AtomicReference<Connection> accepted = new AtomicReference<>();
        listener = serverEngine.listen(fabric.listenAddress("pair"), c ->
        {
            onAccept.accept(c);
            accepted.set(c);
        });
        client = clientEngine.connect(listener.address());
        await("accepted", () -> accepted.get() != null);
        server = accepted.get();
    }

    private synchronized void onError(final Throwable t)
    {
        errors.add(t);
    }

    synchronized List<Throwable> errors()
    {
        return new ArrayList<>(errors);
    }

    @Override
    public void close()
    {
        clientEngine.close();
        serverEngine.close();
    }
}
