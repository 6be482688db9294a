package io.reverb.rpc;

import io.reverb.rpc.transport.inproc.InprocTransportProvider;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The stream SPI's contract suite over {@code inproc://}.
 */
class InprocStreamTransportContractTest extends AbstractStreamTransportContractTest
{
    private static final AtomicInteger IDS = new AtomicInteger();

    @Override
    protected String newServerUri()
    {
        return "inproc://stream-contract-" + IDS.incrementAndGet();
    }

    @Override
    protected boolean killServerConnections(final String uri)
    {
        return InprocTransportProvider.killConnections(uri.substring("inproc://".length())) > 0;
    }
}
