package ${package};

import io.reverb.rpc.RpcServer;

import java.time.Duration;
import java.util.concurrent.TimeUnit;

/**
 * Serves {@code Greeter} until the process is stopped: {@code GreeterServer [uri]}.
 */
public final class GreeterServer
{
    /**
     * Where the server listens, and the client connects, unless told otherwise: {@code reverb://}, one address that
     * picks the best fabric both sides have (shared memory on this host, RDMA where both have a device, else TCP).
     * Loopback only; {@code reverb://0.0.0.0:7000} serves other hosts too.
     */
    public static final String DEFAULT_URI = "reverb://127.0.0.1:7000";

    private GreeterServer()
    {
    }

    /**
     * @param uri where to listen, e.g. {@code reverb://0.0.0.0:7000}, {@code shm://name} or {@code tcp://0.0.0.0:7000}.
     * @return the started server.
     */
    public static RpcServer start(final String uri)
    {
        return RpcServer.builder(uri)
            .addService(new GreeterService())
            // The handlers above never block, so they run on the transport's poller thread (the fastest).
            // Handlers that block (JDBC, files, remote calls) need their own threads:
            // .scheduler(reactor.core.scheduler.Schedulers.boundedElastic())
            .build()
            .start();
    }

    /**
     * @param args optional URI.
     * @throws InterruptedException if interrupted while serving.
     */
    public static void main(final String[] args) throws InterruptedException
    {
        final RpcServer server = start(args.length > 0 ? args[0] : DEFAULT_URI);
        // Ctrl-C or SIGTERM: stop accepting, give calls in flight 5 s to finish, then cancel the rest.
        Runtime.getRuntime().addShutdownHook(new Thread(() ->
        {
            server.shutdown(Duration.ofSeconds(5));
            try
            {
                server.awaitTermination(Duration.ofSeconds(10));
            }
            catch (final InterruptedException e)
            {
                Thread.currentThread().interrupt();
            }
        }, "greeter-shutdown"));
        System.out.println("Greeter listening on " + server.address() + " (Ctrl-C to stop)");
        // The transport's threads are daemons: keep main alive until the server has shut down.
        server.awaitTermination(Long.MAX_VALUE, TimeUnit.DAYS);
    }
}
