package io.reverb.rdma.engine;

import io.reverb.rdma.verbs.VerbsConfig;
import java.util.concurrent.TimeUnit;

/**
 * A verbs provider the engine suite runs over: the scheme {@link RdmaEngine#open} takes, the verbs settings
 * (RNR retries off, so a credit violation surfaces at once as an RNR_RETRY_EXC_ERR completion instead of
 * being hidden by a retry) and where a listener binds. This artifact's fabrics are {@link #SHM} and {@link #TCP};
 * reverb-transport-rdma adds {@code rdma} (DiSNi) in its own tests and runs the same suites over it.
 */
interface EngineFabric
{
    /** Shared memory between engines of one host. */
    EngineFabric SHM = Local.SHM;

    /** Software RDMA over TCP on loopback; a listener on port 0 reports the port it got. */
    EngineFabric TCP = Local.TCP;

    /**
     * @param name a name {@link #name()} returned for {@link #SHM} or {@link #TCP} (a child JVM's argument).
     * @return that fabric.
     */
    static EngineFabric valueOf(final String name)
    {
        return Local.valueOf(name);
    }

    /** @return the fabric's name, as {@link #valueOf(String)} takes it. */
    String name();

    /**
     * @return the scheme for {@link RdmaEngine#open(String, EngineConfig)}.
     */
    String scheme();

    /**
     * @param prefix names the test, for shm files.
     * @return an address to listen on; connect to {@link EngineListener#address()}, which may differ (tcp port 0).
     */
    String listenAddress(String prefix);

    /**
     * @return verbs settings for this fabric with RNR retries off.
     */
    VerbsConfig verbsConfig();

    /** The fabrics of this artifact, which run on any host. */
    enum Local implements EngineFabric
    {
        /** Shared memory between engines of one host. */
        SHM("shm")
        {
            @Override
            public String listenAddress(final String prefix)
            {
                return EngineTestSupport.uniqueName(prefix);
            }

            @Override
            public VerbsConfig verbsConfig()
            {
                return VerbsConfig.defaults().withShmDirectory(EngineTestSupport.shmDirectory()).withRnrRetryNanos(0)
                    .withConnectTimeoutNanos(TimeUnit.SECONDS.toNanos(20));
            }
        },

        /** Software RDMA over TCP on loopback; a listener on port 0 reports the port it got. */
        TCP("tcp")
        {
            @Override
            public String listenAddress(final String prefix)
            {
                return "127.0.0.1:0";
            }

            @Override
            public VerbsConfig verbsConfig()
            {
                return VerbsConfig.defaults().withRnrRetryNanos(0).withConnectTimeoutNanos(TimeUnit.SECONDS.toNanos(20));
            }
        };

        private final String scheme;

        Local(final String scheme)
        {
            this.scheme = scheme;
        }

        @Override
        public String scheme()
        {
            return scheme;
        }
    }
}
