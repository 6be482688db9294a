package io.reverb.rdma.engine;

import io.reverb.rdma.provider.disni.RdmaTestDevice;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/** {@link AbstractEngineMessagingTest} over rdma:// (the RDMA device, or the emulated one: see {@link EngineFabric#RDMA}). */
class RdmaEngineMessagingTest extends AbstractEngineMessagingTest
{
    private static Map<String, Integer> before;

    @BeforeAll
    static void countObjectsOnTheDevice()
    {
        before = RdmaTestDevice.liveEmulatedObjects();
    }

    /** Every engine closed: the device holds no id, QP, CQ, channel, PD or registration of this class's any more. */
    @AfterAll
    static void nothingLeftOnTheDevice() throws InterruptedException
    {
        RdmaTestDevice.assertEmulatedDeviceBackTo(before);
    }

    @Override
    EngineFabric fabric()
    {
        return EngineFabric.RDMA;
    }
}
