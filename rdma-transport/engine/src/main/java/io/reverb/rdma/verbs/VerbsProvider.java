package io.reverb.rdma.verbs;

import java.io.IOException;

/**
 * A verbs fabric, found by {@link java.util.ServiceLoader} (see {@link VerbsProviders}).
 *
 * <p>As with Netty's {@code Epoll.isAvailable()}, a provider reports whether it can run on
 * this machine instead of failing later: {@link #unavailabilityCause()} names what is
 * missing and how to fix it.
 */
public interface VerbsProvider
{
    /**
     * @return short provider name, e.g. {@code "shm"}, {@code "tcp"}, {@code "disni"}.
     */
    String name();

    /**
     * @return the URI scheme this provider serves, e.g. {@code "shm"}, {@code "tcp"}, {@code "rdma"}; by default
     *         the {@link #name()}.
     */
    default String scheme()
    {
        return name();
    }

    /**
     * @return higher wins when two providers serve one scheme.
     */
    default int priority()
    {
        return 0;
    }

    /**
     * @return true when {@link #open(VerbsConfig)} can succeed on this machine: by default, when there is no
     *         {@link #unavailabilityCause()}.
     */
    default boolean isAvailable()
    {
        return unavailabilityCause() == null;
    }

    /**
     * @return null when available, otherwise a sentence saying what is missing and how to fix it.
     */
    String unavailabilityCause();

    /**
     * Opens a device context (ibv_open_device / the first rdma_cm id's verbs).
     *
     * @param config provider settings; {@link VerbsConfig#defaults()} is fine for most uses.
     * @return a new context, owned by the caller.
     * @throws IOException if the provider is unavailable or the device cannot be opened.
     */
    VerbsContext open(VerbsConfig config) throws IOException;
}
