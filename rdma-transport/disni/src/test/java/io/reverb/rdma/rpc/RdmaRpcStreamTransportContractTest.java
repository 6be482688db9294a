package io.reverb.rdma.rpc;

import io.reverb.rpc.AbstractStreamTransportContractTest;

/**
 * rpc-core's stream SPI contract suite over {@code rdma://} (the connection engine over DiSNi) on this host's RDMA
 * device, or on the emulated one ({@link io.reverb.rdma.provider.disni.RdmaTestDevice}); skipped with the reason where
 * neither is there. Named {@code RdmaRpc*Test} so that it runs in the {@code rdma-emulated} surefire execution.
 */
class RdmaRpcStreamTransportContractTest extends AbstractStreamTransportContractTest
{
    @Override
    protected String newServerUri()
    {
        return RdmaTestUris.newServerUri("rdma");
    }

    @Override
    protected boolean killServerConnections(final String uri)
    {
        return EngineTransportTestHooks.killServerConnections(uri) > 0;
    }
}
