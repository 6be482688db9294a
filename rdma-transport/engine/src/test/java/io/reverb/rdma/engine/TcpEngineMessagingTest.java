package io.reverb.rdma.engine;

/** {@link AbstractEngineMessagingTest} over tcp://. */
class TcpEngineMessagingTest extends AbstractEngineMessagingTest
{
    @Override
    EngineFabric fabric()
    {
        return EngineFabric.TCP;
    }
}
