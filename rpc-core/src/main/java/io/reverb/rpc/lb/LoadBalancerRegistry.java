package io.reverb.rpc.lb;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.ServiceLoader;
import java.util.TreeSet;

/**
 * Finds a {@link LoadBalancerProvider} by policy name among those on the class path.
 */
public final class LoadBalancerRegistry
{
    /** The policy used when none is named. */
    public static final String DEFAULT_POLICY = "pick_first";

    private static volatile List<LoadBalancerProvider> providers;

    private LoadBalancerRegistry()
    {
    }

    /**
     * @return every provider found by the service loader (loaded once).
     */
    public static List<LoadBalancerProvider> providers()
    {
        List<LoadBalancerProvider> list = providers;
        if (list == null)
        {
            synchronized (LoadBalancerRegistry.class)
            {
                list = providers;
                if (list == null)
                {
                    list = new ArrayList<>();
                    for (final LoadBalancerProvider provider : ServiceLoader.load(
                        LoadBalancerProvider.class, LoadBalancerRegistry.class.getClassLoader()))
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
     * @param policyName e.g. {@code "round_robin"} (case-insensitive).
     * @return the provider with the highest priority for that name.
     * @throws IllegalArgumentException naming the policies available.
     */
    public static LoadBalancerProvider provider(final String policyName)
    {
        final String name = policyName.toLowerCase(Locale.ROOT);
        LoadBalancerProvider best = null;
        final TreeSet<String> known = new TreeSet<>();
        for (final LoadBalancerProvider provider : providers())
        {
            known.add(provider.policyName());
            if (provider.policyName().equals(name) && (best == null || provider.priority() > best.priority()))
            {
                best = provider;
            }
        }
        if (best == null)
        {
            throw new IllegalArgumentException("no load-balancing policy '" + policyName + "'; available: " + known);
        }
        return best;
    }
}
