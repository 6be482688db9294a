package io.reverb.rdma.engine;

import io.reverb.rdma.verbs.VerbsConfig;
import java.util.concurrent.TimeUnit;

/**
 * A verbs provider the engine suite runs over: the scheme {@link RdmaEngine#open} takes, the verbs settings
 * (RNR retries off, so a credit violation surfaces at once as an RNR_RETRY_EXC_ERR completion instead of
 * being hidden by a retry) and where a listener binds. {@code rdma} (DiSNi) is not here: it needs an RDMA
 * device, which no machine that runs this build has; its conformance suite covers the verbs layer.
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
    };

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
