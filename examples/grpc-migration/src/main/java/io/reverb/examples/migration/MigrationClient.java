package io.reverb.examples.migration;

import io.grpc.ManagedChannel;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.reverb.grpc.ReverbChannelBuilder;

import java.util.concurrent.TimeUnit;

/**
 * Calls the {@link DualServer} as a caller before and after its move: {@code MigrationClient [port] [reverb-uri]}.
 * The stub code is identical; only the channel builder line differs.
 */
public final class MigrationClient
{
    private MigrationClient()
    {
    }

    /**
     * @param channel a channel to the Greeter.
     * @param name    who to greet.
     * @return the greeting.
     */
    public static String greet(final ManagedChannel channel, final String name)
    {
        // a deadline per call, as grpc-java advises: without one a hung server holds the caller for ever
        return GreeterGrpc.newBlockingStub(channel).withDeadlineAfter(5, TimeUnit.SECONDS)
            .sayHello(HelloRequest.newBuilder().setName(name).build()).getMessage();
    }

    /**
     * @param args optional port and Reverb address.
     * @throws InterruptedException if interrupted while closing.
     */
    public static void main(final String[] args) throws InterruptedException
    {
        final int port = args.length > 0 ? Integer.parseInt(args[0]) : DualServer.DEFAULT_PORT;
        final String uri = args.length > 1 ? args[1] : DualServer.DEFAULT_REVERB_URI;
        // before
        final ManagedChannel netty = NettyChannelBuilder.forAddress("127.0.0.1", port).usePlaintext().build();
        // after
        final ManagedChannel reverb = ReverbChannelBuilder.forTarget(uri).build();
        try
        {
            System.out.println("over Netty:  " + greet(netty, "Netty caller"));
            System.out.println("over Reverb: " + greet(reverb, "Reverb caller"));
        }
        finally
        {
            netty.shutdownNow().awaitTermination(10, TimeUnit.SECONDS);
            reverb.shutdownNow().awaitTermination(10, TimeUnit.SECONDS);
        }
    }
}
