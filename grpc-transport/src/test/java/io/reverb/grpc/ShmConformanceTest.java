package io.reverb.grpc;

import io.grpc.SecurityLevel;
import java.util.concurrent.atomic.AtomicInteger;

/** The grpc-java conformance suite over Reverb's {@code shm://} transport. */
class ShmConformanceTest extends AbstractReverbConformanceTest
{
    private static final AtomicInteger IDS = new AtomicInteger();

    @Override
    protected String newAddress()
    {
        return "shm://grpc-conformance-" + ProcessHandle.current().pid() + "-" + IDS.incrementAndGet();
    }

    @Override
    protected String unreachableAddress()
    {
        return "shm://grpc-nobody-" + ProcessHandle.current().pid();
    }

    @Override
    protected SecurityLevel expectedSecurityLevel()
    {
        return SecurityLevel.PRIVACY_AND_INTEGRITY; // memory of one machine, as grpc-java's in-process transport
    }

    @Override
    protected boolean peerHasInetAddress()
    {
        return false; // not an IP transport: the transport's own address, as grpc-java's in-process one
    }
}
