package io.reverb.rdma.engine;

/** {@link AbstractEngineCrossProcessTest} over tcp://. */
class TcpEngineCrossProcessTest extends AbstractEngineCrossProcessTest
{
    @Override
    EngineFabric fabric()
    {
        return EngineFabric.TCP;
    }
}
