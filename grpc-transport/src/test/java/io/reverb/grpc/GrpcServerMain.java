package io.reverb.grpc;

import io.grpc.Server;

import java.util.concurrent.TimeUnit;

/**
 * The other JVM of {@link ShmTwoJvmTest}: serves {@link GrpcEchoService} with grpc-java over Reverb at the address
 * given, prints READY, and shuts down when its standard input closes.
 */
public final class GrpcServerMain
{
    private GrpcServerMain()
    {
    }

    /**
     * @param args the address to serve, e.g. {@code shm://name}.
     * @throws Exception on failure (exit code 1).
     */
    public static void main(final String[] args) throws Exception
    {
        final Server server = ReverbServerBuilder.forAddress(args[0])
            .addService(new GrpcEchoService())
            .maxInboundMessageSize(AbstractGrpcConformanceTest.MAX_MESSAGE)
            .build()
            .start();
        System.out.println("READY");
        System.out.flush();
        while (System.in.read() >= 0)
        {
            // wait for the parent to close our input
        }
        server.shutdown();
        if (!server.awaitTermination(30, TimeUnit.SECONDS))
        {
            server.shutdownNow();
            System.exit(2);
        }
        System.exit(0);
    }
}
