package io.reverb.rdma.rpc;

import io.reverb.rpc.AbstractStreamTransportContractTest;
import java.util.concurrent.atomic.AtomicInteger;

/** rpc-core's stream SPI contract suite over {@code shm://}, i.e. over the connection engine. */
class ShmStreamTransportContractTest extends AbstractStreamTransportContractTest
{
    private static final AtomicInteger IDS = new AtomicInteger();

    @Override
    protected String newServerUri()
    {
        return "shm://stream-contract-" + ProcessHandle.current().pid() + "-" + IDS.incrementAndGet();
    }

    @Override
    protected boolean killServerConnections(final String uri)
    {
        return EngineTransportTestHooks.killServerConnections(uri) > 0;
    }
}
