// CHECKSTYLE.OFF: PackageName - grpc-java's package: AbstractInteropTest gives the server's address only there
package io.grpc.testing.integration;
// CHECKSTYLE.ON: PackageName

/** grpc-java's interop test cases over Reverb's {@code tcp://} transport (loopback). */
public class GrpcInteropSuiteTcpTest extends AbstractReverbInteropTest
{
    @Override
    protected String newAddress()
    {
        return "tcp://127.0.0.1:0";
    }
}
