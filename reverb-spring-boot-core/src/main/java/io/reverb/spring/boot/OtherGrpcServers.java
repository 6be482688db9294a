package io.reverb.spring.boot;

import java.net.URI;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.BeanFactoryUtils;
import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.core.env.Environment;
import org.springframework.util.ClassUtils;

/**
 * The gRPC servers of other Spring integrations in the context, which serve the grpc-java {@code BindableService} beans
 * themselves: Spring gRPC's (a {@code GrpcServerFactory} bean, whether its auto-configured Netty or in-process one or
 * one the application declared, or its {@code GrpcServiceDiscoverer}, also made when it serves through the servlet
 * container) and net.devh's grpc-server-spring-boot-starter (its own {@code GrpcServerFactory}). Found by the
 * beans' class names, so neither needs to be on the class path, and by bean definition, so no bean is made early.
 *
 * <p>Unless {@code reverb.server.grpc-services} says otherwise, the Reverb server then leaves the grpc-java services to
 * that server (served twice, each service would have two addresses and two sets of interceptors and settings), and
 * a Reverb server that still starts (for its native services) must not be given the other server's TCP port.
 */
final class OtherGrpcServers
{
    private static final Logger LOG = LoggerFactory.getLogger(OtherGrpcServers.class);

    /** Spring gRPC's types whose beans mean that it serves the BindableService beans. */
    private static final List<String> SPRING_GRPC = List.of(
        "org.springframework.grpc.server.GrpcServerFactory", "org.springframework.grpc.server.service.GrpcServiceDiscoverer");
    /** The factories that Spring gRPC's auto-configuration makes to listen on spring.grpc.server.port. */
    private static final List<String> SPRING_GRPC_NETTY = List.of(
        "org.springframework.grpc.server.NettyGrpcServerFactory", "org.springframework.grpc.server.ShadedNettyGrpcServerFactory");
    /** net.devh's server factories, which listen on grpc.server.port. */
    private static final String NET_DEVH = "net.devh.boot.grpc.server.serverfactory.GrpcServerFactory";
    /** Spring gRPC's and net.devh's default port. */
    static final int DEFAULT_GRPC_PORT = 9090;

    /**
     * Another gRPC server in the context.
     *
     * @param name         what it is, for messages.
     * @param portProperty the setting its TCP port comes from, or null when it listens on none that is known (only
     *                     in-process, through the servlet container, or from a factory the application made).
     * @param port         that port, or -1 (none, or an ephemeral one).
     * @param off          the setting that turns it off.
     */
    record Server(String name, String portProperty, int port, String off)
    {
    }

    private OtherGrpcServers()
    {
    }

    /**
     * @param beans       the context's bean definitions.
     * @param environment for the other servers' ports.
     * @return the other gRPC servers (Spring gRPC's, net.devh's), possibly none.
     */
    static List<Server> find(final ListableBeanFactory beans, final Environment environment)
    {
        final ClassLoader loader = OtherGrpcServers.class.getClassLoader();
        final Binder binder = Binder.get(environment);
        final List<Server> servers = new ArrayList<>();
        if (anyBean(beans, loader, SPRING_GRPC_NETTY))
        {
            final String address = binder.bind("spring.grpc.server.address", String.class).orElse(null);
            final int port = address != null ? portAfterColon(address) :
                binder.bind("spring.grpc.server.port", Integer.class).orElse(DEFAULT_GRPC_PORT);
            servers.add(new Server("Spring gRPC's server",
                address != null ? "spring.grpc.server.address=" + address : "spring.grpc.server.port=" + port,
                port, "spring.grpc.server.enabled=false"));
        }
        else if (anyBean(beans, loader, SPRING_GRPC))
        {
            servers.add(new Server("Spring gRPC's server", null, -1, "spring.grpc.server.enabled=false"));
        }
        if (anyBean(beans, loader, List.of(NET_DEVH)))
        {
            final int port = binder.bind("grpc.server.port", Integer.class).orElse(DEFAULT_GRPC_PORT);
            servers.add(new Server("net.devh's gRPC server", "grpc.server.port=" + port, port, "grpc.server.port=-1"));
        }
        return servers;
    }

    /**
     * @param setting {@code reverb.server.grpc-services}: null (serve them unless another server does), true, false.
     * @param grpc    the grpc-java services, or null without reverb-grpc.
     * @param others  the other gRPC servers.
     * @return grpc when the Reverb server is to serve the grpc-java services, else null.
     */
    static Serving.GrpcFactory grpcToServe(
        final Boolean setting, final Serving.GrpcFactory grpc, final List<Server> others)
    {
        if (grpc == null || Boolean.TRUE.equals(setting))
        {
            return grpc;
        }
        if (Boolean.FALSE.equals(setting))
        {
            return null;
        }
        if (!others.isEmpty())
        {
            final List<String> names = grpc.serviceNames();
            if (!names.isEmpty())
            {
                LOG.info("{} serves the grpc-java services {}: the Reverb server does not (reverb.server.grpc-services=" +
                    "true serves them on Reverb as well; {} moves them to Reverb)", others.get(0).name(), names,
                    others.get(0).off());
            }
            return null;
        }
        return grpc;
    }

    /**
     * @param address the Reverb server's address ({@code reverb.server.address}).
     * @param others  the other gRPC servers.
     * @throws IllegalStateException naming both settings, if the Reverb server would listen on another one's TCP port
     *                               (the later of the two to start would fail with "address in use").
     */
    static void checkPorts(final String address, final List<Server> others)
    {
        final int port = tcpPort(address);
        if (port <= 0)
        {
            return;
        }
        for (final Server other : others)
        {
            if (other.port() == port)
            {
                throw new IllegalStateException("reverb.server.address=" + address.trim() + " and " + other.name() +
                    " (" + other.portProperty() + ") would both listen on port " + port + ": give one of them another " +
                    "port (or serve Reverb on shm://NAME), or turn " + other.name() + " off (" + other.off() + ") to " +
                    "serve every service on Reverb");
            }
        }
    }

    /**
     * @param address a Reverb server address.
     * @return its TCP port (tcp://, reverb://), or -1 when it listens on none (shm://, rdma://, inproc://) or has none.
     */
    static int tcpPort(final String address)
    {
        if (address == null)
        {
            return -1;
        }
        try
        {
            final URI uri = URI.create(address.trim());
            final String scheme = uri.getScheme() == null ? "" : uri.getScheme().toLowerCase(Locale.ROOT);
            return "tcp".equals(scheme) || "reverb".equals(scheme) ? uri.getPort() : -1;
        }
        catch (final IllegalArgumentException e)
        {
            return -1;
        }
    }

    /** @return the number after the last ':' of a host:port (or static://host:port) address, or -1. */
    private static int portAfterColon(final String address)
    {
        final int colon = address.lastIndexOf(':');
        try
        {
            return colon < 0 ? -1 : Integer.parseInt(address.substring(colon + 1).trim());
        }
        catch (final NumberFormatException e)
        {
            return -1;
        }
    }

    private static boolean anyBean(final ListableBeanFactory beans, final ClassLoader loader, final List<String> types)
    {
        for (final String name : types)
        {
            if (ClassUtils.isPresent(name, loader) &&
                BeanFactoryUtils.beanNamesForTypeIncludingAncestors(
                    beans, ClassUtils.resolveClassName(name, loader), true, false).length > 0)
            {
                return true;
            }
        }
        return false;
    }
}
