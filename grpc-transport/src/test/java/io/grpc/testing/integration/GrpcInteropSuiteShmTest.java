// CHECKSTYLE.OFF: PackageName - grpc-java's package: AbstractInteropTest gives the server's address only there
package io.grpc.testing.integration;
// CHECKSTYLE.ON: PackageName

import java.util.concurrent.atomic.AtomicInteger;

/** grpc-java's interop test cases over Reverb's {@code shm://} transport. */
public class GrpcInteropSuiteShmTest extends AbstractReverbInteropTest
{
    private static final AtomicInteger IDS = new AtomicInteger();

    @Override
    protected String newAddress()
    {
        return "shm://grpc-interop-" + ProcessHandle.current().pid() + "-" + IDS.incrementAndGet();
    }
}
