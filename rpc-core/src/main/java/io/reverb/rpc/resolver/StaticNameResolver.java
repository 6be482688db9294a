package io.reverb.rpc.resolver;

import java.net.URI;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * A fixed list of transport addresses (any mix of schemes). Target form: {@code static:shm://a,tcp://host:7000};
 * a channel given a list of URIs uses one directly.
 */
public final class StaticNameResolver implements NameResolver
{
    private final List<URI> addresses;
    private volatile boolean shutdown;

    /**
     * @param addresses the addresses, at least one.
     */
    public StaticNameResolver(final List<URI> addresses)
    {
        if (addresses.isEmpty())
        {
            throw new IllegalArgumentException("a static address list needs at least one address");
        }
        this.addresses = List.copyOf(addresses);
    }

    /**
     * @param target {@code static:} followed by comma-separated transport addresses.
     * @return the resolver.
     * @throws IllegalArgumentException if an address has no scheme or the list is empty.
     */
    public static StaticNameResolver parse(final URI target)
    {
        final String list = Objects.requireNonNull(target.getRawSchemeSpecificPart(), "target");
        final List<URI> addresses = new ArrayList<>();
        for (final String part : list.split(","))
        {
            final String trimmed = part.trim();
            if (trimmed.isEmpty())
            {
                continue;
            }
            final URI address = URI.create(trimmed);
            if (address.getScheme() == null)
            {
                throw new IllegalArgumentException("address '" + trimmed + "' in " + target +
                    " has no scheme; expected e.g. static:shm://a,tcp://host:7000");
            }
            addresses.add(address);
        }
        if (addresses.isEmpty())
        {
            throw new IllegalArgumentException("no address in " + target + "; expected e.g. static:shm://a,tcp://host:7000");
        }
        return new StaticNameResolver(addresses);
    }

    /**
     * @return the addresses.
     */
    public List<URI> addresses()
    {
        return addresses;
    }

    @Override
    public void start(final Listener listener)
    {
        if (!shutdown)
        {
            listener.onAddresses(addresses);
        }
    }

    @Override
    public void refresh()
    {
        // nothing changes
    }

    @Override
    public void shutdown()
    {
        shutdown = true;
    }

    @Override
    public String toString()
    {
        return "StaticNameResolver" + addresses;
    }

    /** The {@code static} scheme. */
    public static final class Provider implements NameResolverProvider
    {
        @Override
        public String scheme()
        {
            return "static";
        }

        @Override
        public NameResolver newNameResolver(final URI target, final Args args)
        {
            return parse(target);
        }
    }
}
