package io.reverb.rpc.transport;

import java.net.URI;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.ServiceLoader;
import java.util.TreeSet;

/**
 * Finds the {@link TransportProvider} for a URI among those on the class path.
 */
public final class Transports
{
    private static volatile List<TransportProvider> providers;

    private Transports()
    {
    }

    /**
     * @return every provider found by the service loader (loaded once).
     */
    public static List<TransportProvider> providers()
    {
        List<TransportProvider> list = providers;
        if (list == null)
        {
            synchronized (Transports.class)
            {
                list = providers;
                if (list == null)
                {
                    list = new ArrayList<>();
                    for (final TransportProvider provider : ServiceLoader.load(
                        TransportProvider.class, Transports.class.getClassLoader()))
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
     * @param uri an address such as {@code "shm://greeter"}.
     * @return the parsed URI.
     * @throws IllegalArgumentException if it is not a valid URI with a scheme.
     */
    public static URI parse(final String uri)
    {
        final URI parsed;
        try
        {
            parsed = URI.create(uri);
        }
        catch (final IllegalArgumentException e)
        {
            throw new IllegalArgumentException("invalid address '" + uri + "': " + e.getMessage(), e);
        }
        if (parsed.getScheme() == null)
        {
            throw new IllegalArgumentException("address '" + uri + "' has no scheme; expected e.g. shm://name, inproc://name");
        }
        return parsed;
    }

    /**
     * @param uri an address.
     * @return the available provider with the highest priority for its scheme.
     * @throws IllegalArgumentException naming the available schemes and why the others are unavailable.
     */
    public static TransportProvider providerFor(final URI uri)
    {
        final String scheme = uri.getScheme().toLowerCase(Locale.ROOT);
        TransportProvider best = null;
        for (final TransportProvider provider : providers())
        {
            if (provider.scheme().equalsIgnoreCase(scheme) && provider.isAvailable() &&
                (best == null || provider.priority() > best.priority()))
            {
                best = provider;
            }
        }
        if (best != null)
        {
            return best;
        }
        throw new IllegalArgumentException(describeMissing(uri, scheme));
    }

    private static String describeMissing(final URI uri, final String scheme)
    {
        final TreeSet<String> available = new TreeSet<>();
        final StringBuilder unavailable = new StringBuilder();
        boolean schemeKnown = false;
        for (final TransportProvider provider : providers())
        {
            if (provider.isAvailable())
            {
                available.add(provider.scheme());
            }
            else
            {
                schemeKnown |= provider.scheme().equalsIgnoreCase(scheme);
                unavailable.append(unavailable.length() == 0 ? "" : "; ")
                    .append(provider.scheme()).append(" (").append(provider.getClass().getName()).append("): ")
                    .append(provider.unavailabilityCause());
            }
        }
        final StringBuilder sb = new StringBuilder();
        if (schemeKnown)
        {
            sb.append("transport for '").append(scheme).append("' is not available, cannot use ").append(uri);
        }
        else
        {
            sb.append("no transport for scheme '").append(scheme).append("' in ").append(uri);
        }
        sb.append(". Available schemes: ").append(available.isEmpty() ? "none" : String.join(", ", available));
        if (unavailable.length() > 0)
        {
            sb.append(". Unavailable: ").append(unavailable);
        }
        else if (!schemeKnown)
        {
            sb.append(" (shm://, tcp:// and rdma:// come with io.reverb:reverb-transport on the class path)");
        }
        return sb.toString();
    }
}
