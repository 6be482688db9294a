package io.reverb.rdma.engine;

/** {@link AbstractEngineHandshakeTest} over shm://. */
class ShmEngineHandshakeTest extends AbstractEngineHandshakeTest
{
    @Override
    EngineFabric fabric()
    {
        return EngineFabric.SHM;
    }
}
