package io.reverb.rdma.rpc;

import io.reverb.rdma.provider.disni.EmulatedDeviceLeakCheck;
import io.reverb.rdma.provider.disni.RdmaTrafficCheck;
import io.reverb.rpc.AbstractCompressionTest;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * rpc-core's compression suite over {@code rdma://} (eager SENDs and the rendezvous RDMA WRITE on the RDMA device, or
 * the emulated one), as {@code TcpCompressionTest} runs it over tcp://.
 */
@ExtendWith({RdmaTrafficCheck.class, EmulatedDeviceLeakCheck.class})
class RdmaRpcCompressionTest extends AbstractCompressionTest
{
    @Override
    protected String newServerUri()
    {
        return RdmaTestUris.newServerUri("rdma");
    }
}
