package io.reverb.grpc;

import java.util.concurrent.atomic.AtomicInteger;

/** The transport contract suite over Reverb's {@code tcp://} transport. */
class TcpTransportContractTest extends AbstractReverbTransportContractTest
{
    private static final AtomicInteger IDS = new AtomicInteger();

    @Override
    protected String newAddress()
    {
        return "tcp://127.0.0.1:0";
    }
}
