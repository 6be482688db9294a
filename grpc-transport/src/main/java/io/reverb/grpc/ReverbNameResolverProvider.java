package io.reverb.grpc;

import io.grpc.NameResolver;
import io.grpc.NameResolverProvider;
import java.net.SocketAddress;
import java.net.URI;
import java.util.Collection;
import java.util.Collections;
import java.util.List;

/**
 * grpc-java's name resolvers for Reverb addresses, in its global registry (found by {@link java.util.ServiceLoader}),
 * one per scheme ({@code shm}, {@code tcp}, {@code rdma}, {@code reverb}, {@code inproc}): a target such as
 * {@code shm://greeter} resolves to that one address, a {@link ReverbAddress}, which only Reverb's transport reaches.
 * That is how {@code Grpc.newChannelBuilder("shm://greeter", InsecureChannelCredentials.create())} finds
 * {@link ReverbChannelProvider}: grpc-java gives a target to the channel providers whose address types cover what the
 * target's resolver produces, and Netty's and OkHttp's take no {@link ReverbAddress}.
 *
 * <p>Priority 1, below grpc-java's DNS resolver (5): the scheme of a target written without one ({@code host:port})
 * stays {@code dns}. A Reverb channel built by {@link ReverbChannelBuilder} resolves its own target with its own
 * resolver, not these.
 */
public abstract class ReverbNameResolverProvider extends NameResolverProvider
{
    private final String scheme;

    ReverbNameResolverProvider(final String scheme)
    {
        this.scheme = scheme;
    }

    @Override
    protected boolean isAvailable()
    {
        return true;
    }

    @Override
    protected int priority()
    {
        return 1;
    }

    @Override
    public String getDefaultScheme()
    {
        return scheme;
    }

    @Override
    public Collection<Class<? extends SocketAddress>> getProducedSocketAddressTypes()
    {
        return Collections.singleton(ReverbAddress.class);
    }

    /**
     * @param targetUri a target of this provider's scheme.
     * @param args      grpc-java's arguments (unused: the address is the target itself).
     * @return a resolver that gives the target's one address, or null for another scheme.
     * @throws IllegalArgumentException if the target is not a well-formed Reverb address.
     */
    @Override
    public NameResolver newNameResolver(final URI targetUri, final NameResolver.Args args)
    {
        if (!scheme.equals(targetUri.getScheme()))
        {
            return null;
        }
        final String authority = targetUri.getAuthority() != null ? targetUri.getAuthority() : "reverb";
        return new AddressListResolverProvider(List.of(new ReverbAddress(targetUri.toString())), authority).resolver();
    }

    /** {@code shm://name}. */
    public static final class Shm extends ReverbNameResolverProvider
    {
        /** For {@link java.util.ServiceLoader}. */
        public Shm()
        {
            super("shm");
        }
    }

    /** {@code tcp://host:port}. */
    public static final class Tcp extends ReverbNameResolverProvider
    {
        /** For {@link java.util.ServiceLoader}. */
        public Tcp()
        {
            super("tcp");
        }
    }

    /** {@code rdma://host:port}. */
    public static final class Rdma extends ReverbNameResolverProvider
    {
        /** For {@link java.util.ServiceLoader}. */
        public Rdma()
        {
            super("rdma");
        }
    }

    /** {@code reverb://host:port} (the best fabric both sides have). */
    public static final class Reverb extends ReverbNameResolverProvider
    {
        /** For {@link java.util.ServiceLoader}. */
        public Reverb()
        {
            super("reverb");
        }
    }

    /** {@code inproc://name} (Reverb's in-process transport, not grpc-java's). */
    public static final class Inproc extends ReverbNameResolverProvider
    {
        /** For {@link java.util.ServiceLoader}. */
        public Inproc()
        {
            super("inproc");
        }
    }
}
