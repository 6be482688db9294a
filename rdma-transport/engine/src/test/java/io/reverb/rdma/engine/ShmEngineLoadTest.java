package io.reverb.rdma.engine;

/** {@link AbstractEngineLoadTest} over shm://. */
class ShmEngineLoadTest extends AbstractEngineLoadTest
{
    @Override
    EngineFabric fabric()
    {
        return EngineFabric.SHM;
    }
}
