package io.reverb.grpc;

import java.util.concurrent.atomic.AtomicInteger;

/** The grpc-java conformance suite over Reverb's {@code tcp://} transport. */
class TcpConformanceTest extends AbstractReverbConformanceTest
{
    private static final AtomicInteger IDS = new AtomicInteger();

    @Override
    protected String newAddress()
    {
        return "tcp://127.0.0.1:0";
    }

    @Override
    protected String unreachableAddress()
    {
        return "tcp://127.0.0.1:1";
    }
}
