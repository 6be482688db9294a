// CHECKSTYLE.OFF: PackageName - grpc-java's package: AbstractInteropTest gives the server's address only there
package io.grpc.testing.integration;
// CHECKSTYLE.ON: PackageName

import io.reverb.grpc.ReverbChannelBuilder;
import io.reverb.grpc.ReverbServerBuilder;

import java.util.concurrent.atomic.AtomicInteger;

/**
 * grpc-java's interop test cases over {@code shm://} with {@code directExecutor()} on the channel and the server (as
 * latency-minded users and the benchmarks run it): grpc-java's callbacks and the service's code run on Reverb's own
 * threads, the path where a callback that blocks, or two that overlap, would show.
 */
public class GrpcInteropSuiteDirectTest extends AbstractReverbInteropTest
{
    private static final AtomicInteger IDS = new AtomicInteger();

    @Override
    protected String newAddress()
    {
        return "shm://grpc-interop-direct-" + ProcessHandle.current().pid() + "-" + IDS.incrementAndGet();
    }

    @Override
    protected ReverbServerBuilder configure(final ReverbServerBuilder builder)
    {
        return builder.directExecutor();
    }

    @Override
    protected ReverbChannelBuilder configure(final ReverbChannelBuilder builder)
    {
        return builder.directExecutor();
    }
}
