package io.reverb.rdma.engine;

import static org.assertj.core.api.Assertions.assertThat;

import io.reverb.rdma.verbs.VerbsConfig;
import java.io.Closeable;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/** {@link AbstractEngineAttackTest} against a server on {@code tcp://}. */
class TcpEngineAttackTest extends AbstractEngineAttackTest
{
    @Override
    protected String scheme()
    {
        return "tcp";
    }

    @Override
    protected String listenAddress()
    {
        return "127.0.0.1:0";
    }

    @Override
    protected VerbsConfig verbsConfig()
    {
        return VerbsConfig.defaults().withRnrRetryNanos(0).withConnectTimeoutNanos(TimeUnit.SECONDS.toNanos(20))
            .withHandshakeTimeoutNanos(TimeUnit.SECONDS.toNanos(30)).withMaxPendingHandshakes(8);
    }

    private static InetSocketAddress parse(final String address)
    {
        final int colon = address.lastIndexOf(':');
        return new InetSocketAddress(address.substring(0, colon), Integer.parseInt(address.substring(colon + 1)));
    }

    @Override
    protected List<Closeable> idleSockets(final String address, final int n) throws IOException
    {
        final InetSocketAddress target = parse(address);
        final List<Closeable> sockets = new ArrayList<>();
        for (int i = 0; i < n; i++)
        {
            sockets.add(new Socket(target.getAddress(), target.getPort()));
        }
        return sockets;
    }

    @Override
    protected int sendOversizeProviderHandshakes(final String address) throws IOException
    {
        final InetSocketAddress target = parse(address);
        final int[] depths = {1 << 27, Integer.MAX_VALUE, 1 << 24};
        for (final int depth : depths)
        {
            try (Socket socket = new Socket(target.getAddress(), target.getPort()))
            {
                socket.setSoTimeout(20_000);
                final DataOutputStream out = new DataOutputStream(socket.getOutputStream());
                out.writeInt(0x5256_5443); // "RVTC"
                out.writeByte(1);
                out.writeByte(1); // CONNECT
                out.writeShort(0);
                out.writeInt(depth);
                out.writeLong(0);
                out.flush();
                assertThat(socket.getInputStream().read()).as("dropped without an answer").isEqualTo(-1);
            }
        }
        return depths.length;
    }
}
