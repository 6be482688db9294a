package io.reverb.rpc.resolver;

import java.net.URI;

/**
 * Creates {@link NameResolver}s for one target scheme, found by {@link java.util.ServiceLoader}: list
 * implementations in {@code META-INF/services/io.reverb.rpc.resolver.NameResolverProvider}. Built in:
 * {@code dns} and {@code static}.
 */
public interface NameResolverProvider
{
    /**
     * @return the target scheme served, e.g. {@code "dns"}.
     */
    String scheme();

    /**
     * @return higher wins when several providers serve one scheme.
     */
    default int priority()
    {
        return 5;
    }

    /**
     * @param target the channel's target, e.g. {@code dns:///replicas.internal:7000?transport=tcp}.
     * @param args   the channel's settings.
     * @return a resolver, not started.
     * @throws IllegalArgumentException if the target is malformed, saying how.
     */
    NameResolver newNameResolver(URI target, NameResolver.Args args);
}
