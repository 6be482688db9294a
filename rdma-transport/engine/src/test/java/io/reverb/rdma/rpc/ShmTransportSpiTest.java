package io.reverb.rdma.rpc;

import io.reverb.rpc.transport.AbstractTransportSpiTest;
import java.util.concurrent.atomic.AtomicInteger;

/** rpc-core's transport SPI conformance suite over {@code shm://}. */
class ShmTransportSpiTest extends AbstractTransportSpiTest
{
    private static final AtomicInteger IDS = new AtomicInteger();

    @Override
    protected String newServerUri()
    {
        return "shm://spi-" + ProcessHandle.current().pid() + "-" + IDS.incrementAndGet();
    }
}
