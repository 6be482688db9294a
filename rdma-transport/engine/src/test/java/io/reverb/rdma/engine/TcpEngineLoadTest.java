package io.reverb.rdma.engine;

/** {@link AbstractEngineLoadTest} over tcp://. */
class TcpEngineLoadTest extends AbstractEngineLoadTest
{
    @Override
    EngineFabric fabric()
    {
        return EngineFabric.TCP;
    }
}
