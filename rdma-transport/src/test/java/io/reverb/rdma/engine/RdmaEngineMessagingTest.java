package io.reverb.rdma.engine;

/** {@link AbstractEngineMessagingTest} over rdma:// (the RDMA device, or the emulated one: see {@link EngineFabric#RDMA}). */
class RdmaEngineMessagingTest extends AbstractEngineMessagingTest
{
    @Override
    EngineFabric fabric()
    {
        return EngineFabric.RDMA;
    }
}
