// CHECKSTYLE.OFF: PackageName - grpc-java's package: AbstractInteropTest gives the server's address only there
package io.grpc.testing.integration;
// CHECKSTYLE.ON: PackageName

/**
 * grpc-java's interop test cases over {@code reverb://} on loopback: each connection starts on tcp and moves to
 * {@code shm://} (client and server share a host), so every case also runs across the fabric move.
 */
public class GrpcInteropSuiteReverbTest extends AbstractReverbInteropTest
{
    @Override
    protected String newAddress()
    {
        return "reverb://127.0.0.1:0";
    }
}
