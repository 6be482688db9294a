package io.reverb.grpc;

import java.util.concurrent.atomic.AtomicInteger;

/** The transport contract suite over Reverb's {@code shm://} transport. */
class ShmTransportContractTest extends AbstractReverbTransportContractTest
{
    private static final AtomicInteger IDS = new AtomicInteger();

    @Override
    protected String newAddress()
    {
        return "shm://grpc-contract-" + ProcessHandle.current().pid() + "-" + IDS.incrementAndGet();
    }
}
