package io.reverb.examples;

/**
 * Where the examples listen and connect: the first command-line argument, or a default.
 */
public final class Uris
{
    private Uris()
    {
    }

    /**
     * @param args       the command-line arguments of a main.
     * @param defaultUri the URI to use when none is given, e.g. {@code shm://reverb-hello}.
     * @return the transport URI, e.g. {@code shm://name}, {@code tcp://host:port}, {@code rdma://host:port}.
     */
    public static String uriFrom(final String[] args, final String defaultUri)
    {
        return args.length > 0 && !args[0].isBlank() ? args[0] : defaultUri;
    }
}
