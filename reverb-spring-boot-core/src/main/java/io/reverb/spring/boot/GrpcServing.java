package io.reverb.spring.boot;

import io.grpc.BindableService;
import io.grpc.Server;
import io.reverb.grpc.ReverbServerBuilder;
import io.reverb.rpc.RpcServer;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.UnaryOperator;

/**
 * Serves grpc-java {@link BindableService} beans with reverb-grpc's {@link ReverbServerBuilder}: grpc-java's own server
 * over a Reverb server, which serves the native services on the same address.
 */
final class GrpcServing implements Serving.GrpcFactory
{
    private final List<BindableService> services;
    private final List<ReverbGrpcServerCustomizer> customizers;

    GrpcServing(final List<BindableService> services, final List<ReverbGrpcServerCustomizer> customizers)
    {
        this.services = List.copyOf(services);
        this.customizers = List.copyOf(customizers);
    }

    @Override
    public List<String> serviceNames()
    {
        final List<String> names = new ArrayList<>();
        for (final BindableService service : services)
        {
            names.add(service.bindService().getServiceDescriptor().getName());
        }
        return names;
    }

    @Override
    public Serving create(final String address, final UnaryOperator<RpcServer.Builder> configure)
    {
        final ReverbServerBuilder builder = ReverbServerBuilder.forAddress(address).reverbServer(configure);
        services.forEach(builder::addService);
        customizers.forEach(c -> c.customize(builder));
        final Server server = builder.build();
        return new Serving()
        {
            @Override
            public void start()
            {
                try
                {
                    server.start();
                }
                catch (final IOException e)
                {
                    throw new UncheckedIOException(e.getMessage(), e);
                }
            }

            @Override
            public String address()
            {
                return server.getListenSockets().isEmpty() ? address : server.getListenSockets().get(0).toString();
            }

            @Override
            public void shutdown(final Duration gracePeriod)
            {
                server.shutdown(); // grpc-java's: calls run until they end; the lifecycle bounds the wait
            }

            @Override
            public boolean awaitTermination(final Duration timeout) throws InterruptedException
            {
                return server.awaitTermination(timeout.toNanos(), TimeUnit.NANOSECONDS);
            }

            @Override
            public void shutdownNow()
            {
                server.shutdownNow();
            }
        };
    }
}
