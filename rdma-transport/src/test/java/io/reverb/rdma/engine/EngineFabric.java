package io.reverb.rdma.engine;

import io.reverb.rdma.provider.disni.DisniVerbsProvider;
import io.reverb.rdma.provider.disni.RdmaTestDevice;
import io.reverb.rdma.verbs.VerbsConfig;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;

/**
 * A verbs provider the engine suite runs over: the scheme {@link RdmaEngine#open} takes, the verbs settings
 * (RNR retries off, so a credit violation surfaces at once as an RNR_RETRY_EXC_ERR completion instead of
 * being hidden by a retry) and where a listener binds. {@code rdma} (DiSNi) runs on the host's RDMA device, or
 * over the emulated one of the test class path where the build asks for it ({@link RdmaTestDevice}); its tests
 * skip with the reason where neither is there.
 */
enum EngineFabric
{
    /** Shared memory between engines of one host. */
    SHM("shm")
    {
        @Override
        String listenAddress(final String prefix)
        {
            return EngineTestSupport.uniqueName(prefix);
        }

        @Override
        VerbsConfig verbsConfig()
        {
            return VerbsConfig.defaults().withShmDirectory(EngineTestSupport.shmDirectory()).withRnrRetryNanos(0)
                .withConnectTimeoutNanos(TimeUnit.SECONDS.toNanos(20));
        }
    },

    /** Software RDMA over TCP on loopback; a listener on port 0 reports the port it got. */
    TCP("tcp")
    {
        @Override
        String listenAddress(final String prefix)
        {
            return "127.0.0.1:0";
        }

        @Override
        VerbsConfig verbsConfig()
        {
            return VerbsConfig.defaults().withRnrRetryNanos(0).withConnectTimeoutNanos(TimeUnit.SECONDS.toNanos(20));
        }
    },

    /** DiSNi: the RDMA device (real or emulated) of {@value RdmaTestDevice#EMULATED_HOST} or the configured address. */
    RDMA("rdma")
    {
        @Override
        String listenAddress(final String prefix)
        {
            return host() + ":0";
        }

        @Override
        VerbsConfig verbsConfig()
        {
            assumeRdma();
            return VerbsConfig.defaults().withRnrRetryNanos(0).withConnectTimeoutNanos(TimeUnit.SECONDS.toNanos(20));
        }
    };

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

    private final String scheme;

    EngineFabric(final String scheme)
    {
        this.scheme = scheme;
    }

    /**
     * @return the scheme for {@link RdmaEngine#open(String, EngineConfig)}.
     */
    String scheme()
    {
        return scheme;
    }

    /**
     * @param prefix names the test, for shm files.
     * @return an address to listen on; connect to {@link EngineListener#address()}, which may differ (tcp port 0).
     */
    abstract String listenAddress(String prefix);

    /**
     * @return verbs settings for this fabric with RNR retries off.
     */
    abstract VerbsConfig verbsConfig();
}
