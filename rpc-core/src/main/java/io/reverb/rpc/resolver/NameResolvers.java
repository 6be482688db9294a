package io.reverb.rpc.resolver;

import io.reverb.rpc.transport.Transports;
import java.net.URI;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.ServiceLoader;

/**
 * Finds the resolver for a channel target: a {@link NameResolverProvider} registered for its scheme
 * ({@code dns:///host:port}, {@code static:a,b}), else, for a transport address ({@code shm://name},
 * {@code tcp://host:port}), a static resolver of that one address.
 */
public final class NameResolvers
{
    private static volatile List<NameResolverProvider> providers;

    private NameResolvers()
    {
    }

    /**
     * @return every provider found by the service loader (loaded once).
     */
    public static List<NameResolverProvider> providers()
    {
        List<NameResolverProvider> list = providers;
        if (list == null)
        {
            synchronized (NameResolvers.class)
            {
                list = providers;
                if (list == null)
                {
                    list = new ArrayList<>();
                    for (final NameResolverProvider provider : ServiceLoader.load(
                        NameResolverProvider.class, NameResolvers.class.getClassLoader()))
                    {
                        list.add(provider);
                    }
                    providers = list = List.copyOf(list);
                }
            }
        }
        return list;
    }

    /**
     * @param target a resolver target or a transport address.
     * @param args   the channel's settings.
     * @return a resolver, not started.
     * @throws IllegalArgumentException if the target is malformed.
     */
    public static NameResolver newNameResolver(final String target, final NameResolver.Args args)
    {
        final URI uri = Transports.parse(target);
        final String scheme = uri.getScheme().toLowerCase(Locale.ROOT);
        NameResolverProvider best = null;
        for (final NameResolverProvider provider : providers())
        {
            if (provider.scheme().equalsIgnoreCase(scheme) && (best == null || provider.priority() > best.priority()))
            {
                best = provider;
            }
        }
        return best != null ? best.newNameResolver(uri, args) : new StaticNameResolver(List.of(uri));
    }

    /**
     * @param target a channel target.
     * @return true if a resolver is registered for its scheme (e.g. {@code dns:///host:port}); false for a
     * transport address or a malformed target.
     */
    public static boolean isResolverTarget(final String target)
    {
        final int colon = target.indexOf(':');
        if (colon <= 0)
        {
            return false;
        }
        final String scheme = target.substring(0, colon);
        for (final NameResolverProvider provider : providers())
        {
            if (provider.scheme().equalsIgnoreCase(scheme))
            {
                return true;
            }
        }
        return false;
    }

    /**
     * @param addresses transport addresses, any mix of schemes.
     * @return a static resolver of them.
     * @throws IllegalArgumentException if one has no scheme or the list is empty.
     */
    public static NameResolver forAddresses(final List<String> addresses)
    {
        final List<URI> uris = new ArrayList<>(addresses.size());
        for (final String address : addresses)
        {
            uris.add(Transports.parse(address));
        }
        return new StaticNameResolver(uris);
    }
}
