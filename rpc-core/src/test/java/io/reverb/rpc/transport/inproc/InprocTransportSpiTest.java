package io.reverb.rpc.transport.inproc;

import io.reverb.rpc.transport.AbstractTransportSpiTest;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The transport SPI conformance suite over {@code inproc://}.
 */
class InprocTransportSpiTest extends AbstractTransportSpiTest
{
    private static final AtomicInteger IDS = new AtomicInteger();

    @Override
    protected String newServerUri()
    {
        return "inproc://spi-" + IDS.incrementAndGet();
    }
}
