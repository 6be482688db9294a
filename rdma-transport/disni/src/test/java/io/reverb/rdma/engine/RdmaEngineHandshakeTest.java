package io.reverb.rdma.engine;

import io.reverb.rdma.provider.disni.EmulatedDeviceLeakCheck;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * {@link AbstractEngineHandshakeTest} over rdma:// (the RDMA device, or the emulated one: see {@link RdmaEngineFabric#RDMA});
 * the emulated device must hold nothing of this class's after it.
 */
@ExtendWith(EmulatedDeviceLeakCheck.class)
class RdmaEngineHandshakeTest extends AbstractEngineHandshakeTest
{
    @Override
    EngineFabric fabric()
    {
        return RdmaEngineFabric.RDMA;
    }
}
