package io.reverb.grpc;

import io.reverb.rdma.provider.disni.EmulatedDeviceLeakCheck;
import io.reverb.rdma.provider.disni.RdmaTestDevice;
import io.reverb.rdma.provider.disni.RdmaTrafficCheck;
import io.reverb.rdma.verbs.TestScale;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * reverb-grpc's transport contract suite over Reverb's {@code rdma://} transport (the RDMA device, or the emulated
 * one), as {@code TcpTransportContractTest} and {@code ShmTransportContractTest} run it over tcp:// and shm://.
 */
@ExtendWith({RdmaTrafficCheck.class, EmulatedDeviceLeakCheck.class})
class RdmaGrpcTransportContractTest extends AbstractReverbTransportContractTest
{
    @Override
    protected String newAddress()
    {
        return "rdma://" + RdmaTestDevice.hostOrSkip() + ":0";
    }

    /** Over a real device on a slow host (TestScale: a VM under emulation), longer deadlines. */
    @Override
    protected long scaledMillis(final long millis)
    {
        return TimeUnit.NANOSECONDS.toMillis(TestScale.nanos(TimeUnit.MILLISECONDS.toNanos(millis)));
    }
}
