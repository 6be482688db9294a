package io.reverb.rdma.verbs;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.ServiceLoader;

/**
 * Discovers {@link VerbsProvider}s through {@link ServiceLoader}.
 */
public final class VerbsProviders
{
    private VerbsProviders()
    {
    }

    /**
     * @return every provider on the class path, available or not, highest priority first.
     */
    public static List<VerbsProvider> all()
    {
        final List<VerbsProvider> providers = new ArrayList<>();
        for (final VerbsProvider provider : ServiceLoader.load(VerbsProvider.class, VerbsProviders.class.getClassLoader()))
        {
            providers.add(provider);
        }
        providers.sort(Comparator.comparingInt(VerbsProvider::priority).reversed());
        return providers;
    }

    /**
     * @param scheme URI scheme, e.g. {@code "shm"}.
     * @return the highest-priority available provider for the scheme.
     * @throws IllegalArgumentException naming the schemes that exist and why unavailable ones are not usable.
     */
    public static VerbsProvider forScheme(final String scheme)
    {
        final List<VerbsProvider> providers = all();
        final StringBuilder why = new StringBuilder();
        for (final VerbsProvider provider : providers)
        {
            if (provider.scheme().equalsIgnoreCase(scheme))
            {
                if (provider.isAvailable())
                {
                    return provider;
                }
                why.append(' ').append(provider.name()).append(": ").append(provider.unavailabilityCause()).append('.');
            }
        }
        if (why.length() > 0)
        {
            throw new IllegalArgumentException("verbs provider for " + scheme + ":// is not available:" + why);
        }
        final StringBuilder known = new StringBuilder();
        for (final VerbsProvider provider : providers)
        {
            known.append(known.length() == 0 ? "" : ", ").append(provider.scheme()).append("://")
                .append(provider.isAvailable() ? "" : " (unavailable: " + provider.unavailabilityCause() + ")");
        }
        throw new IllegalArgumentException("no verbs provider for scheme '" + scheme + "'; known: " + known);
    }
}
