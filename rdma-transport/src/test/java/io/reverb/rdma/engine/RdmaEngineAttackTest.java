package io.reverb.rdma.engine;

import static org.assertj.core.api.Assertions.assertThat;

import io.reverb.rdma.verbs.VerbsConfig;
import java.io.Closeable;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * {@link AbstractEngineAttackTest} against a server on {@code rdma://} (the RDMA device, or the emulated one: see
 * {@link EngineFabric#RDMA}). The provider's own handshake is a TCP side channel before rdma_cm; its attacks are
 * raw sockets to it.
 */
class RdmaEngineAttackTest extends AbstractEngineAttackTest
{
    /** The DiSNi provider's handshake: "RVDH", version 2, frame type REQUEST. */
    private static final int MAGIC = 0x52564448;
    private static final int VERSION = 2;
    private static final int REQUEST = 1;

    @Override
    protected String scheme()
    {
        return "rdma";
    }

    @Override
    protected String listenAddress()
    {
        return EngineFabric.host() + ":0";
    }

    @Override
    protected VerbsConfig verbsConfig()
    {
        EngineFabric.assumeRdma();
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
        // Private data lengths beyond the limit (at most 255 fit the frame), then a frame type and a version that
        // do not exist: each is dropped without an answer.
        final int[][] frames = {{VERSION, REQUEST, 255}, {VERSION, REQUEST, 200}, {VERSION, 99, 0}, {99, REQUEST, 0}};
        for (final int[] frame : frames)
        {
            try (Socket socket = new Socket(target.getAddress(), target.getPort()))
            {
                socket.setSoTimeout(20_000);
                final DataOutputStream out = new DataOutputStream(socket.getOutputStream());
                out.writeInt(MAGIC);
                out.writeByte(frame[0]);
                out.writeByte(frame[1]);
                out.writeByte(frame[2]);
                out.flush();
                try
                {
                    out.write(new byte[frame[2]]);
                    out.flush();
                }
                catch (final IOException ex)
                {
                    // The listener dropped the socket on the header already: what is being tested.
                }
                assertThat(readOrReset(socket)).as("dropped without an answer").isEqualTo(-1);
            }
        }
        return frames.length;
    }

    /** @return the next byte, or -1 at end of stream or when the peer reset the connection (it dropped us). */
    private static int readOrReset(final Socket socket) throws IOException
    {
        try
        {
            return socket.getInputStream().read();
        }
        catch (final SocketException ex)
        {
            return -1;
        }
    }
}
