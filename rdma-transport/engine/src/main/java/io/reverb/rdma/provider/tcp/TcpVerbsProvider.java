package io.reverb.rdma.provider.tcp;

import io.reverb.rdma.verbs.VerbsConfig;
import io.reverb.rdma.verbs.VerbsContext;
import io.reverb.rdma.verbs.VerbsProvider;
import java.io.IOException;

/**
 * The {@code tcp://} fabric: software RDMA over TCP, in the spirit of SoftiWARP. Needs nothing but a
 * JVM and a network, so it is always available. See {@link TcpVerbsContext} for how it works.
 */
public final class TcpVerbsProvider implements VerbsProvider
{
    /** Provider name and URI scheme. */
    public static final String NAME = "tcp";

    @Override
    public String name()
    {
        return NAME;
    }

    @Override
    public String unavailabilityCause()
    {
        return null;
    }

    @Override
    public VerbsContext open(final VerbsConfig config) throws IOException
    {
        return new TcpVerbsContext(this, config == null ? VerbsConfig.defaults() : config);
    }

    @Override
    public String toString()
    {
        return "TcpVerbsProvider";
    }
}
