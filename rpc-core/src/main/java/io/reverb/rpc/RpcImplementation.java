package io.reverb.rpc;

import java.util.Iterator;
import java.util.ServiceLoader;

/**
 * Where this API package finds its implementation, as grpc-java's {@code ManagedChannelRegistry} finds a
 * {@code ManagedChannelProvider}: looked up once with {@link ServiceLoader} (rpc-core registers its own in
 * {@code META-INF/services/io.reverb.rpc.RpcImplementation}), so that {@code io.reverb.rpc} imports none of the
 * implementation's packages. Not for applications: they use {@link RpcChannel#builder}, {@link RpcServer#builder} and
 * {@link RpcClientConnection#create}.
 */
public interface RpcImplementation
{
    /**
     * @param settings the channel's settings (copied: the builder may change afterwards).
     * @return a new channel, not yet connected.
     */
    RpcChannel newChannel(RpcChannel.Builder settings);

    /**
     * @param settings the connection's settings (copied).
     * @return a new connection, not yet connected.
     */
    RpcClientConnection newConnection(RpcChannel.Builder settings);

    /**
     * @param settings the server's settings (copied).
     * @return the server's runtime, not yet started.
     */
    RpcServer.Runtime newServer(RpcServer.Builder settings);

    /**
     * @return the implementation on the class path (the first one {@link ServiceLoader} finds, looked up once).
     * @throws IllegalStateException if there is none (rpc-core's jar is incomplete or repackaged without its
     *                               {@code META-INF/services} file).
     */
    static RpcImplementation get()
    {
        return Holder.INSTANCE;
    }

    /** Lazy holder: the lookup runs once, on first use. */
    final class Holder
    {
        static final RpcImplementation INSTANCE = load();

        private Holder()
        {
        }

        private static RpcImplementation load()
        {
            final Iterator<RpcImplementation> found =
                ServiceLoader.load(RpcImplementation.class, RpcImplementation.class.getClassLoader()).iterator();
            if (!found.hasNext())
            {
                throw new IllegalStateException("no io.reverb.rpc.RpcImplementation on the class path: reverb-rpc-core's " +
                    "META-INF/services/io.reverb.rpc.RpcImplementation is missing (a repackaged jar must keep it)");
            }
            return found.next();
        }
    }
}
