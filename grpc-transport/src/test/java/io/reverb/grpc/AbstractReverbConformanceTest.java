package io.reverb.grpc;

import io.grpc.ManagedChannelBuilder;
import io.grpc.Server;
import io.grpc.ServerBuilder;
import io.reverb.rpc.transport.ResourceUsage;
import io.reverb.rpc.transport.Transports;

import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.fail;

/**
 * The conformance suite over a Reverb transport: grpc-java's channel and server built with
 * {@link ReverbChannelBuilder} and {@link ReverbServerBuilder}. After each test every registered buffer and credit
 * of the transport must be back, as rpc-core's and rdma-transport's suites assert.
 */
abstract class AbstractReverbConformanceTest extends AbstractGrpcConformanceTest
{
    private String address;

    /**
     * @return a fresh server address of this transport.
     */
    protected abstract String newAddress();

    @Override
    protected ServerBuilder<?> newServerBuilder()
    {
        address = newAddress();
        return ReverbServerBuilder.forAddress(address);
    }

    @Override
    protected ManagedChannelBuilder<?> newChannelBuilder(final Server server)
    {
        // the bound address (an ephemeral tcp port resolved)
        return ReverbChannelBuilder.forTarget(server.getListenSockets().get(0).toString());
    }

    /**
     * @return an address of this transport where nothing listens.
     */
    protected abstract String unreachableAddress();

    @Override
    protected ManagedChannelBuilder<?> newUnreachableChannelBuilder()
    {
        return ReverbChannelBuilder.forTarget(unreachableAddress());
    }

    @Override
    protected int maxSentAheadOfReader(final int total, final int requested)
    {
        // the client's stream asks the server for what grpc-java requested plus a window of at most
        // MAX_WINDOW_MESSAGES ahead (as Netty's HTTP/2 window lets a server send ahead, by bytes): a bound, not total-1
        return requested + ReverbClientStream.MAX_WINDOW_MESSAGES;
    }

    @Override
    protected void assertTransportResourcesReleased() throws Exception
    {
        assertReleased(address);
    }

    static void assertReleased(final String address) throws InterruptedException
    {
        final ResourceUsage usage = Transports.providerFor(Transports.parse(address)).resourceUsage();
        final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (usage.buffersInUse() != 0 || usage.bytesInUse() != 0)
        {
            if (System.nanoTime() - deadline > 0)
            {
                fail("transport resources leaked: " + usage.describe());
            }
            Thread.sleep(5);
        }
    }
}
