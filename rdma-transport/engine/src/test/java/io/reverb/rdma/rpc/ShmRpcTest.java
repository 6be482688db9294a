package io.reverb.rdma.rpc;

import io.reverb.rpc.AbstractRpcTransportTest;
import java.util.concurrent.atomic.AtomicInteger;

/** rpc-core's call suite over {@code shm://}, i.e. over the connection engine. */
class ShmRpcTest extends AbstractRpcTransportTest
{
    private static final AtomicInteger IDS = new AtomicInteger();

    @Override
    protected String newServerUri()
    {
        return "shm://rpc-" + ProcessHandle.current().pid() + "-" + IDS.incrementAndGet();
    }

    @Override
    protected boolean killServerConnections(final String serverUri)
    {
        return EngineTransportTestHooks.killServerConnections(serverUri) > 0;
    }

    @Override
    protected boolean freezeServer(final String serverUri, final boolean frozen)
    {
        EngineTransportTestHooks.freezeServer(serverUri, frozen);
        return true;
    }

    @Override
    protected boolean freezeClients(final String serverUri, final boolean frozen)
    {
        return EngineTransportTestHooks.freezeClients(serverUri, frozen) > 0;
    }
}
