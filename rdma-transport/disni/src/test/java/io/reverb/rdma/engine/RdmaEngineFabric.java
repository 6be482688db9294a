package io.reverb.rdma.engine;

import io.reverb.rdma.provider.disni.DisniVerbsProvider;
import io.reverb.rdma.provider.disni.RdmaTestDevice;
import io.reverb.rdma.verbs.VerbsConfig;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;

/**
 * The engine suites' {@code rdma} fabric (DiSNi): the host's RDMA device, or the emulated one of the test class path
 * where the build asks for it ({@link RdmaTestDevice}); its tests skip with the reason where neither is there.
 */
enum RdmaEngineFabric implements EngineFabric
{
    /** DiSNi: the RDMA device (real or emulated) of {@value RdmaTestDevice#EMULATED_HOST} or the configured address. */
    RDMA;

    /** Skips the calling test (with the reason) where rdma:// can run neither on hardware nor emulated. */
    static void assumeRdma()
    {
        final String cause = RdmaTestDevice.unavailabilityCause();
        Assumptions.assumeTrue(cause == null, cause);
    }

    /** @return the IPv4 address rdma:// contexts open by default. */
    static String host()
    {
        assumeRdma();
        final String configured = System.getProperty(DisniVerbsProvider.LOCAL_ADDRESS_PROP);
        return configured != null ? configured : RdmaTestDevice.EMULATED_HOST;
    }

    @Override
    public String scheme()
    {
        return "rdma";
    }

    @Override
    public String listenAddress(final String prefix)
    {
        return host() + ":0";
    }

    @Override
    public VerbsConfig verbsConfig()
    {
        assumeRdma();
        return VerbsConfig.defaults().withRnrRetryNanos(0).withConnectTimeoutNanos(TimeUnit.SECONDS.toNanos(20));
    }
}
