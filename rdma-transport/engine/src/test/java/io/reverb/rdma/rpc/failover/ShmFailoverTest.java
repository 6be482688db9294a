package io.reverb.rdma.rpc.failover;

import java.util.List;

/** {@link AbstractFailoverTest} over {@code shm://}. */
class ShmFailoverTest extends AbstractFailoverTest
{
    private final String prefix = "failover-" + ProcessHandle.current().pid() + "-" + System.nanoTime();

    @Override
    protected String replicaUri(final int index)
    {
        return "shm://" + prefix + "-" + index;
    }

    @Override
    protected List<String> childJvmOptions()
    {
        final String dir = System.getProperty("reverb.test.shm.dir");
        return dir == null ? List.of() : List.of("-Dreverb.test.shm.dir=" + dir);
    }
}
