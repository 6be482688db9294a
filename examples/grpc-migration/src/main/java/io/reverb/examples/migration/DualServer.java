package io.reverb.examples.migration;

import io.grpc.Server;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.reverb.grpc.ReverbServerBuilder;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.util.concurrent.TimeUnit;

/**
 * Serves one {@link GreeterService} instance over Netty (the callers not moved yet) and over Reverb (those moved)
 * at once: {@code DualServer [port] [reverb-uri]}, by default port {@value #DEFAULT_PORT} and
 * {@value #DEFAULT_REVERB_URI}.
 */
public final class DualServer implements AutoCloseable
{
    /** Netty port unless told otherwise. */
    public static final int DEFAULT_PORT = 50051;
    /** Reverb address unless told otherwise. */
    public static final String DEFAULT_REVERB_URI = "shm://reverb-migration";

    private final Server netty;
    private final Server reverb;

    private DualServer(final Server netty, final Server reverb)
    {
        this.netty = netty;
        this.reverb = reverb;
    }

    /**
     * @param port      Netty port (0: ephemeral).
     * @param reverbUri Reverb address.
     * @return both servers, started, sharing one service instance.
     * @throws IOException if either cannot bind.
     */
    public static DualServer start(final int port, final String reverbUri) throws IOException
    {
        final GreeterService service = new GreeterService();
        // before: the only server
        final Server netty = NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", port))
            .addService(service).build().start();
        // after: the same service, one builder line different
        final Server reverb = ReverbServerBuilder.forAddress(reverbUri)
            .addService(service).build().start();
        return new DualServer(netty, reverb);
    }

    /**
     * @return the Netty port.
     */
    public int nettyPort()
    {
        return netty.getPort();
    }

    /**
     * @return the Reverb address clients connect to.
     */
    public String reverbAddress()
    {
        return reverb.getListenSockets().get(0).toString();
    }

    @Override
    public void close() throws InterruptedException
    {
        netty.shutdown();
        reverb.shutdown();
        netty.awaitTermination(10, TimeUnit.SECONDS);
        reverb.awaitTermination(10, TimeUnit.SECONDS);
    }

    /**
     * @param args optional port and Reverb address.
     * @throws Exception if the servers cannot start.
     */
    public static void main(final String[] args) throws Exception
    {
        final int port = args.length > 0 ? Integer.parseInt(args[0]) : DEFAULT_PORT;
        final String uri = args.length > 1 ? args[1] : DEFAULT_REVERB_URI;
        final DualServer server = start(port, uri);
        System.out.println("Greeter on grpc://127.0.0.1:" + server.nettyPort() + " and " + server.reverbAddress());
        Runtime.getRuntime().addShutdownHook(new Thread(() ->
        {
            try
            {
                server.close();
            }
            catch (final InterruptedException e)
            {
                Thread.currentThread().interrupt();
            }
        }));
        Thread.currentThread().join();
    }
}
