// CHECKSTYLE.OFF: PackageName - grpc-java's package: AbstractInteropTest gives the server's address only there
package io.grpc.testing.integration;
// CHECKSTYLE.ON: PackageName

import io.grpc.ManagedChannelBuilder;
import io.grpc.ServerBuilder;
import io.reverb.grpc.ReverbChannelBuilder;
import io.reverb.grpc.ReverbServerBuilder;
import io.reverb.rpc.transport.ResourceUsage;
import io.reverb.rpc.transport.Transports;
import org.junit.After;
import org.junit.Assume;
import org.junit.Test;

import java.util.concurrent.TimeUnit;

import static org.junit.Assert.fail;

/**
 * grpc-java's own interop test cases ({@link AbstractInteropTest}: the cases every grpc-java transport passes, as
 * its Netty, OkHttp and in-process tests run them) over a Reverb transport: grpc-java's channel and server built with
 * {@link ReverbChannelBuilder} and {@link ReverbServerBuilder}, grpc-java's {@code TestServiceImpl} behind it. The
 * cases check what a grpc-java user sees: statuses and their descriptions, metadata, deadlines, cancellation, flow
 * control, message limits, compression, the transport's addresses, and what the stream tracers (the hooks of
 * grpc-java's census and OpenTelemetry modules) are told about each message and each call's end.
 * <p>
 * After each case every registered buffer and credit of the transport must be back, as in the conformance suite.
 * It lives in grpc-java's package because the base class gives the server's bound address only there (a tcp server
 * binds an ephemeral port).
 */
public abstract class AbstractReverbInteropTest extends AbstractInteropTest
{
    private String address;

    /**
     * @return a fresh server address of this transport.
     */
    protected abstract String newAddress();

    @Override
    protected ServerBuilder<?> getServerBuilder()
    {
        address = newAddress();
        return ReverbServerBuilder.forAddress(address).maxInboundMessageSize(MAX_MESSAGE_SIZE);
    }

    @Override
    protected ManagedChannelBuilder<?> createChannelBuilder()
    {
        return ReverbChannelBuilder.forTarget(getListenAddress().toString()).maxInboundMessageSize(MAX_MESSAGE_SIZE);
    }

    @Override
    protected boolean metricsExpected()
    {
        // census's records need grpc-census on the class path, and with it there grpc-java turns its own census on
        // in every channel and server of this module's tests (the allocation and interceptor tests among them); the
        // tracers' events, which census and OpenTelemetry read, are checked by every case all the same
        return false;
    }

    /**
     * Skipped with its reason: the case needs grpc-census's interceptors (see {@link #metricsExpected}); grpc-java's
     * base class would skip it without saying why.
     */
    @Override
    @Test
    public void censusContextsPropagated()
    {
        Assume.assumeTrue("needs grpc-census's interceptors, which this suite does not install (see " +
            "metricsExpected)", customCensusModulePresent());
        super.censusContextsPropagated();
    }

    @Override
    @After
    public void tearDown()
    {
        super.tearDown(); // the channel and the server shut down
        final ResourceUsage usage = Transports.providerFor(Transports.parse(address)).resourceUsage();
        final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (usage.buffersInUse() != 0 || usage.bytesInUse() != 0)
        {
            if (System.nanoTime() - deadline > 0)
            {
                fail("transport resources leaked: " + usage.describe());
            }
            try
            {
                Thread.sleep(5);
            }
            catch (final InterruptedException e)
            {
                Thread.currentThread().interrupt();
                throw new AssertionError(e);
            }
        }
    }
}
