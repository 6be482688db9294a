package io.reverb.spring.boot;

import java.time.Duration;
import java.util.List;
import java.util.function.UnaryOperator;
import io.reverb.rpc.RpcServer;

/**
 * A started-or-not server under {@link ReverbServerLifecycle}: a native {@link RpcServer}, or a grpc-java server over
 * one (reverb-grpc) when grpc-java services are served too.
 */
interface Serving
{
    /** Binds and starts accepting. */
    void start();

    /** @return the address as bound (an ephemeral port resolved). */
    String address();

    /**
     * Stops accepting, tells clients to go away, lets calls in flight run.
     *
     * @param gracePeriod how long they may run.
     */
    void shutdown(Duration gracePeriod);

    /**
     * @param timeout how long to wait.
     * @return true once terminated.
     * @throws InterruptedException if interrupted.
     */
    boolean awaitTermination(Duration timeout) throws InterruptedException;

    /** Cancels every call and closes every connection. */
    void shutdownNow();

    /** Makes a {@link Serving} for grpc-java services (present only with reverb-grpc and grpc-java). */
    interface GrpcFactory
    {
        /**
         * @return the names of the grpc-java services (BindableService beans), possibly none.
         */
        List<String> serviceNames();

        /**
         * @param address   where to listen.
         * @param configure configures the Reverb server under grpc-java's (native services, settings, customizers).
         * @return the server, not started.
         */
        Serving create(String address, UnaryOperator<RpcServer.Builder> configure);
    }

    /**
     * A native Reverb server.
     *
     * @param server the server.
     * @return it as a {@link Serving}.
     */
    static Serving of(final RpcServer server)
    {
        return new Serving()
        {
            @Override
            public void start()
            {
                server.start();
            }

            @Override
            public String address()
            {
                return server.address();
            }

            @Override
            public void shutdown(final Duration gracePeriod)
            {
                server.shutdown(gracePeriod);
            }

            @Override
            public boolean awaitTermination(final Duration timeout) throws InterruptedException
            {
                return server.awaitTermination(timeout);
            }

            @Override
            public void shutdownNow()
            {
                server.close();
            }
        };
    }
}
