package io.reverb.rdma.verbs;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.ServiceLoader;

/**
 * Discovers {@link VerbsProvider}s through {@link ServiceLoader}. The shm and tcp providers come with this
 * artifact; the rdma provider (DiSNi) comes with {@value #RDMA_ARTIFACT}, and a scheme asked for without
 * its artifact fails with an error that names the artifact to add.
 */
public final class VerbsProviders
{
    /** The artifact (groupId:artifactId) that brings the {@code rdma} provider: DiSNi, and the sun.nio.ch export. */
    public static final String RDMA_ARTIFACT = "io.reverb:reverb-transport-rdma";

    /** Schemes whose provider is in an artifact of its own (for rdma: the DiSNi provider), and that artifact. */
    private static final Map<String, String> ARTIFACTS = Map.of("rdma", RDMA_ARTIFACT);

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
     * @throws IllegalArgumentException naming the schemes that exist and why unavailable ones are not usable, or
     *     the artifact to add for a scheme whose provider is not on the class path.
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
        final String artifact = ARTIFACTS.get(scheme.toLowerCase(Locale.ROOT));
        if (artifact != null)
        {
            throw new IllegalArgumentException(scheme + ":// needs the verbs provider of " + artifact +
                ", which is not on the class path: add that dependency (same version as io.reverb:reverb-transport)");
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
