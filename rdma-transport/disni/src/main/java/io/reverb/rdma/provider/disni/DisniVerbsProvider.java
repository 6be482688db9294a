package io.reverb.rdma.provider.disni;

import io.reverb.rdma.verbs.VerbsConfig;
import io.reverb.rdma.verbs.VerbsContext;
import io.reverb.rdma.verbs.VerbsProvider;
import java.io.IOException;

/**
 * Real RDMA (InfiniBand, RoCE, Soft-RoCE; not iWARP) through DiSNi 2.1, serving {@code rdma://host:port}.
 *
 * <p>Availability is probed lazily, once per JVM, and cached (see {@link DisniAvailability}): a
 * machine without an RDMA device never loads native code, and {@link #unavailabilityCause()} says which piece is
 * missing and how to install it. The native half DiSNi's Java half calls ships in this artifact (see
 * {@code rdma-transport/RDMA-HARDWARE.md}, step 2); it needs rdma-core's runtime libraries.
 *
 * <table>
 *   <caption>Settings</caption>
 *   <tr><th>setting (its default from the system property)</th><th>meaning</th><th>default</th></tr>
 *   <tr><td>{@link VerbsConfig#rdmaLocalAddress()} ({@value #LOCAL_ADDRESS_PROP})</td><td>IPv4 address of the RDMA interface whose device a context
 *       opens (PDs, CQs and QPs of one context live on one device)</td><td>the device of the first specific
 *       address the context listens on, else the first IPv4 address of an up interface of the first
 *       non-iWARP device, from sysfs</td></tr>
 * </table>
 * {@link VerbsConfig#connectTimeoutNanos()} bounds the handshake and rdma_cm steps;
 * {@link VerbsConfig#rnrRetryNanos()} becomes the rdma_cm RNR retry count this side sends its peer: 0 stays 0,
 * anything else rounds up to a multiple of 655.36 ms, at most 6 (3.9 s): see {@link RnrRetry}.
 *
 * <p>iWARP devices (including Soft-iWARP, {@code siw}) are reported as unsupported: the engine's rendezvous
 * completes with RDMA_WRITE_WITH_IMM, which iWARP lacks, and iWARP has no RNR retry.
 */
public final class DisniVerbsProvider implements VerbsProvider
{
    /** IPv4 address of the RDMA interface to open: the default of {@link VerbsConfig#rdmaLocalAddress()}. */
    public static final String LOCAL_ADDRESS_PROP = VerbsConfig.RDMA_LOCAL_ADDRESS_PROP;

    private static final Object PROBE_LOCK = new Object();
    private static volatile boolean probed;
    private static volatile String cause;

    /** Used by {@link java.util.ServiceLoader}. */
    public DisniVerbsProvider()
    {
    }

    @Override
    public String name()
    {
        return "disni";
    }

    @Override
    public String scheme()
    {
        return "rdma";
    }

    @Override
    public String unavailabilityCause()
    {
        if (!probed)
        {
            synchronized (PROBE_LOCK)
            {
                if (!probed)
                {
                    // Once per JVM: libdisni cannot be unloaded or loaded twice, and the answer cannot change.
                    cause = DisniAvailability.probeThisMachine();
                    probed = true;
                }
            }
        }
        return cause;
    }

    /**
     * Replaces this JVM's cached probe result. For tests only (package-private): the test helper
     * {@code RdmaTestDevice} calls it once it has routed DiSNi to the emulated RDMA device of the test class path,
     * on a host without a real one.
     *
     * @param newCause null for "available", otherwise the cause to report.
     */
    static void overrideAvailability(final String newCause)
    {
        synchronized (PROBE_LOCK)
        {
            cause = newCause;
            probed = true;
        }
    }

    @Override
    public VerbsContext open(final VerbsConfig config) throws IOException
    {
        final String why = unavailabilityCause();
        if (why != null)
        {
            throw new IOException(why);
        }
        return DisniVerbsContext.open(this, config == null ? VerbsConfig.defaults() : config);
    }

    @Override
    public String toString()
    {
        return "DisniVerbsProvider{scheme=rdma, available=" + isAvailable() + '}';
    }
}
