package io.reverb.rdma.engine;

/** {@link AbstractEngineCrossProcessTest} over shm://. */
class ShmEngineCrossProcessTest extends AbstractEngineCrossProcessTest
{
    @Override
    EngineFabric fabric()
    {
        return EngineFabric.SHM;
    }
}
