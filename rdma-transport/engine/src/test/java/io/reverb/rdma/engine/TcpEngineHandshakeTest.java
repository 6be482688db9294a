package io.reverb.rdma.engine;

/** {@link AbstractEngineHandshakeTest} over tcp://. */
class TcpEngineHandshakeTest extends AbstractEngineHandshakeTest
{
    @Override
    EngineFabric fabric()
    {
        return EngineFabric.TCP;
    }
}
