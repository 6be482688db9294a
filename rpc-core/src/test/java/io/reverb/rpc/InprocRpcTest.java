package io.reverb.rpc;

import io.reverb.rpc.transport.inproc.InprocTransportProvider;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The call suite over {@code inproc://}.
 */
class InprocRpcTest extends AbstractRpcTransportTest
{
    private static final AtomicInteger IDS = new AtomicInteger();

    @Override
    protected String newServerUri()
    {
        return "inproc://rpc-test-" + IDS.incrementAndGet();
    }

    @Override
    protected boolean killServerConnections(final String serverUri)
    {
        return InprocTransportProvider.killConnections(serverUri.substring("inproc://".length())) > 0;
    }

    @Override
    protected boolean freezeServer(final String serverUri, final boolean frozen)
    {
        InprocTransportProvider.freezeServer(serverUri.substring("inproc://".length()), frozen);
        return true;
    }
}
