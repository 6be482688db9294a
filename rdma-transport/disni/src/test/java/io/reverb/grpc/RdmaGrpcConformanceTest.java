package io.reverb.grpc;

import io.reverb.rdma.provider.disni.EmulatedDeviceLeakCheck;
import io.reverb.rdma.provider.disni.RdmaTestDevice;
import io.reverb.rdma.provider.disni.RdmaTrafficCheck;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * reverb-grpc's grpc-java conformance suite over Reverb's {@code rdma://} transport (the RDMA device, or the emulated
 * one), as {@code TcpConformanceTest} and {@code ShmConformanceTest} run it over tcp:// and shm://.
 */
@ExtendWith({RdmaTrafficCheck.class, EmulatedDeviceLeakCheck.class})
class RdmaGrpcConformanceTest extends AbstractReverbConformanceTest
{
    @Override
    protected String newAddress()
    {
        return "rdma://" + RdmaTestDevice.hostOrSkip() + ":0";
    }

    @Override
    protected String unreachableAddress()
    {
        // The rdma:// handshake's TCP port: nothing listens on port 1.
        return "rdma://" + RdmaTestDevice.hostOrSkip() + ":1";
    }
}
