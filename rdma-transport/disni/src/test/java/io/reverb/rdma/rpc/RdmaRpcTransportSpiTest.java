package io.reverb.rdma.rpc;

import io.reverb.rdma.provider.disni.EmulatedDeviceLeakCheck;
import io.reverb.rdma.provider.disni.RdmaTrafficCheck;
import io.reverb.rpc.transport.AbstractTransportSpiTest;
import org.junit.jupiter.api.extension.ExtendWith;

/** rpc-core's transport SPI conformance suite over {@code rdma://}, as {@code ShmTransportSpiTest} runs it over shm://. */
@ExtendWith({RdmaTrafficCheck.class, EmulatedDeviceLeakCheck.class})
class RdmaRpcTransportSpiTest extends AbstractTransportSpiTest
{
    @Override
    protected String newServerUri()
    {
        return RdmaTestUris.newServerUri("rdma");
    }
}
