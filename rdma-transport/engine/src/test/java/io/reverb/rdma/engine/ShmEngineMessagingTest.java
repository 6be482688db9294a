package io.reverb.rdma.engine;

/** {@link AbstractEngineMessagingTest} over shm://. */
class ShmEngineMessagingTest extends AbstractEngineMessagingTest
{
    @Override
    EngineFabric fabric()
    {
        return EngineFabric.SHM;
    }
}
