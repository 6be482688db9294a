package io.reverb.rdma.engine;

import static org.assertj.core.api.Assertions.assertThat;

import io.reverb.rdma.verbs.VerbsConfig;
import java.io.Closeable;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * {@link AbstractEngineAttackTest} against a server on {@code rdma://} (issue 24, part 2 item 3): the same
 * handshake deadline, pending-handshake cap and refusals as {@code shm://} and {@code tcp://}. Runs only where
 * DiSNi is available (an RDMA device and libdisni, or the emulated device of issue 24 part 1); elsewhere every
 * test is skipped with the provider's cause. The listener's handshake itself (deadline, cap, eviction, a
 * connector that never connects over rdma_cm) is tested without a device in {@code DisniListenerHandshakeTest}.
 * In the build it runs in the {@code rdma-emulated} Surefire execution (the emulated device where there is no
 * real one; see {@link RdmaEngineFabric#RDMA}).
 */
class RdmaEngineAttackTest extends AbstractEngineAttackTest
{
    @Override
    protected String scheme()
    {
        return "rdma";
    }

    @Override
    protected String listenAddress()
    {
        return RdmaEngineFabric.RDMA.listenAddress("attack");
    }

    @Override
    protected VerbsConfig verbsConfig()
    {
        // Called first by every test's set-up (RdmaEngineFabric skips there, with the cause, where rdma:// cannot run).
        return RdmaEngineFabric.RDMA.verbsConfig().withHandshakeTimeoutNanos(TimeUnit.SECONDS.toNanos(30))
            .withMaxPendingHandshakes(8);
    }

    /**
     * Issue 24, part 2 item 3, end to end: connectors that stop after their REQUEST, or after reading the OFFER, sit
     * in the listener's handshake threads until their deadline (30 s here) and never reach the engine's one accept
     * thread, so a client connects meanwhile (its connect timeout is 20 s: on the version 2 handshake the first
     * stalled connector alone held the accept thread that long).
     */
    @Test
    void shouldAcceptAClientWhileOtherConnectorsStallMidHandshake() throws Exception
    {
        final InetSocketAddress target = parse(listener.address());
        final List<Socket> stalled = new ArrayList<>();
        try
        {
            for (int i = 0; i < 4; i++)
            {
                final Socket socket = new Socket(target.getAddress(), target.getPort());
                stalled.add(socket);
                socket.setSoTimeout(20_000);
                final DataOutputStream out = new DataOutputStream(socket.getOutputStream());
                // A REQUEST the engine would accept: a well-formed hello with the token's nonce slot.
                final ByteBuffer hello = Handshake.encodeRequest(server.config(), new byte[Handshake.NONCE_LENGTH],
                    0x1000L, 1, Handshake.VERSION);
                out.writeInt(0x52564448);
                out.writeByte(3);
                out.writeByte(1); // REQUEST
                out.writeByte(hello.remaining());
                while (hello.hasRemaining())
                {
                    out.writeByte(hello.get());
                }
                out.flush();
                if (i % 2 == 0)
                {
                    // Read the OFFER, then stall: the listener now waits for this connector's SOURCE.
                    assertThat(new DataInputStream(socket.getInputStream()).readInt()).isEqualTo(0x52564448);
                }
            }
            final long acceptedBefore = listener.acceptedCount();

            final Connection fresh = client.connect(listener.address());
            assertServes(fresh);

            assertThat(listener.acceptedCount()).isEqualTo(acceptedBefore + 1);
            fresh.close();
        }
        finally
        {
            for (final Socket socket : stalled)
            {
                socket.close();
            }
        }
        assertStillServing();
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
        // REQUESTs announcing more private data than rdma_cm carries, and a REQUEST whose sender then never
        // sends its SOURCE nor connects over rdma_cm (it must not reach the engine, and is dropped at the deadline).
        int sent = 0;
        for (final int length : new int[] {57, 255})
        {
            try (Socket socket = new Socket(target.getAddress(), target.getPort()))
            {
                socket.setSoTimeout(20_000);
                final DataOutputStream out = new DataOutputStream(socket.getOutputStream());
                out.writeInt(0x52564448); // "RVDH"
                out.writeByte(3);
                out.writeByte(1); // REQUEST
                out.writeByte(length);
                out.flush();
                assertThat(socket.getInputStream().read()).as("dropped without an answer").isEqualTo(-1);
                sent++;
            }
        }
        try (Socket socket = new Socket(target.getAddress(), target.getPort()))
        {
            socket.setSoTimeout(20_000);
            final DataOutputStream out = new DataOutputStream(socket.getOutputStream());
            out.writeInt(0x52564448);
            out.writeByte(3);
            out.writeByte(1);
            out.writeByte(0);
            out.flush();
            final DataInputStream in = new DataInputStream(socket.getInputStream());
            assertThat(in.readInt()).as("OFFER").isEqualTo(0x52564448);
            sent++;
        }
        return sent;
    }
}
