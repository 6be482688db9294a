package io.reverb.rdma.engine;

/** {@link AbstractEngineHandshakeTest} over rdma:// (the RDMA device, or the emulated one: see {@link EngineFabric#RDMA}). */
class RdmaEngineHandshakeTest extends AbstractEngineHandshakeTest
{
    @Override
    EngineFabric fabric()
    {
        return EngineFabric.RDMA;
    }
}
