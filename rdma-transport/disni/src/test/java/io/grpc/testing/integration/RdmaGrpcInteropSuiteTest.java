// CHECKSTYLE.OFF: PackageName - grpc-java's package: AbstractInteropTest gives the server's address only there
package io.grpc.testing.integration;
// CHECKSTYLE.ON: PackageName

import io.reverb.rdma.provider.disni.RdmaTestDevice;
import io.reverb.rdma.provider.disni.RdmaTrafficCheck;
import org.junit.AfterClass;
import org.junit.Assume;
import org.junit.BeforeClass;

import java.util.Map;

/**
 * grpc-java's interop test cases over Reverb's {@code rdma://} (the RDMA device, or the emulated one), as
 * {@code GrpcInteropSuiteTcpTest} and {@code GrpcInteropSuiteShmTest} run them over tcp:// and shm://: after each case
 * every buffer and credit must be back; after the class, every QP, CQ, registration and rdma_cm id the class made on
 * the emulated device must be gone, and its calls must have gone over the device (RC connections established, or the
 * real ports' packets). JUnit 4, as grpc-java's base class is: the rdma:// suites' JUnit 5 extensions are called from
 * here instead. Where rdma:// cannot run the class skips with the cause.
 */
public class RdmaGrpcInteropSuiteTest extends AbstractReverbInteropTest
{
    private static long trafficBefore;
    private static Map<String, Integer> deviceBefore;

    @BeforeClass
    public static void device()
    {
        final String cause = RdmaTestDevice.unavailabilityCause();
        Assume.assumeTrue("rdma:// cannot run here: " + cause, cause == null);
        trafficBefore = RdmaTrafficCheck.traffic();
        deviceBefore = RdmaTestDevice.liveEmulatedObjects();
    }

    @AfterClass
    public static void deviceBack() throws InterruptedException
    {
        if (deviceBefore == null)
        {
            return; // skipped
        }
        RdmaTrafficCheck.assertTrafficSince(RdmaGrpcInteropSuiteTest.class.getSimpleName(), trafficBefore);
        RdmaTestDevice.assertEmulatedDeviceBackTo(deviceBefore);
    }

    @Override
    protected String newAddress()
    {
        return "rdma://" + RdmaTestDevice.hostOrSkip() + ":0";
    }
}
