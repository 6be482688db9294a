package io.reverb.rdma.rpc;

import io.reverb.rdma.provider.disni.EmulatedDeviceLeakCheck;
import io.reverb.rdma.provider.disni.RdmaTrafficCheck;
import io.reverb.rpc.AbstractLargeMessageTest;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * rpc-core's large-message suite (buffers reused or lent, and their lifetime) over {@code rdma://}: the engine's
 * rendezvous path on the RDMA device, or the emulated one, as {@code ShmLargeMessageTest} runs it over shm://.
 */
@ExtendWith({RdmaTrafficCheck.class, EmulatedDeviceLeakCheck.class})
class RdmaRpcLargeMessageTest extends AbstractLargeMessageTest
{
    @Override
    protected String newServerUri()
    {
        return RdmaTestUris.newServerUri("rdma");
    }
}
