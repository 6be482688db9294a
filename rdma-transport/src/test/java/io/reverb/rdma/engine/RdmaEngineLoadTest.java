package io.reverb.rdma.engine;

/** {@link AbstractEngineLoadTest} over rdma:// (the RDMA device, or the emulated one: see {@link EngineFabric#RDMA}). */
class RdmaEngineLoadTest extends AbstractEngineLoadTest
{
    @Override
    EngineFabric fabric()
    {
        return EngineFabric.RDMA;
    }
}
