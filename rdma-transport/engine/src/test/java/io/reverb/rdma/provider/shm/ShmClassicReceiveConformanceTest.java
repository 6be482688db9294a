package io.reverb.rdma.provider.shm;

import io.reverb.rdma.verbs.VerbsConfig;
import java.util.List;

/**
 * The conformance suite against the shm provider with inline receive off ({@link VerbsConfig#shmInlineReceive()}):
 * every receive completion through the receive CQ's shared ring, as before the inbox existed.
 */
class ShmClassicReceiveConformanceTest extends ShmConformanceTest
{
    @Override
    protected VerbsConfig config()
    {
        return super.config().withShmInlineReceive(false);
    }

    @Override
    protected List<String> childJvmArguments()
    {
        return List.of(super.childJvmArguments().get(0), "-D" + VerbsConfig.SHM_INLINE_RECEIVE_PROP + "=false");
    }
}
