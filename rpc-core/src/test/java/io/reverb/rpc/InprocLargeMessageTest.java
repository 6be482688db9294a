package io.reverb.rpc;

import java.util.concurrent.atomic.AtomicInteger;

/**
 * Large messages and their memory's lifetime over {@code inproc://}.
 */
class InprocLargeMessageTest extends AbstractLargeMessageTest
{
    private static final AtomicInteger IDS = new AtomicInteger();

    @Override
    protected String newServerUri()
    {
        return "inproc://large-" + IDS.incrementAndGet();
    }
}
