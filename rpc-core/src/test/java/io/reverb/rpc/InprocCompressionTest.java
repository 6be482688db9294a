package io.reverb.rpc;

import java.util.concurrent.atomic.AtomicInteger;

/**
 * Message compression over {@code inproc://}: the frames are the same as over the engine, so gzip, the flag and
 * the limits work alike in tests.
 */
class InprocCompressionTest extends AbstractCompressionTest
{
    private static final AtomicInteger IDS = new AtomicInteger();

    @Override
    protected String newServerUri()
    {
        return "inproc://compression-" + IDS.incrementAndGet();
    }
}
