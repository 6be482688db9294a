package io.reverb.rdma.rpc.failover;

import java.net.ServerSocket;

/** {@link AbstractFailoverTest} over {@code tcp://} (fixed ports, so that a restarted replica has its address). */
class TcpFailoverTest extends AbstractFailoverTest
{
    @Override
    protected String replicaUri(final int index) throws Exception
    {
        try (ServerSocket probe = new ServerSocket(0))
        {
            return "tcp://127.0.0.1:" + probe.getLocalPort();
        }
    }
}
