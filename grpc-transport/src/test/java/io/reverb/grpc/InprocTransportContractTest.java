package io.reverb.grpc;

import java.util.concurrent.atomic.AtomicInteger;

/** The transport contract suite over Reverb's {@code inproc://} transport. */
class InprocTransportContractTest extends AbstractReverbTransportContractTest
{
    private static final AtomicInteger IDS = new AtomicInteger();

    @Override
    protected String newAddress()
    {
        return "inproc://grpc-contract-" + IDS.incrementAndGet();
    }
}
