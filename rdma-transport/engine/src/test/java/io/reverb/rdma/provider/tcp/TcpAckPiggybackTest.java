package io.reverb.rdma.provider.tcp;

import static org.assertj.core.api.Assertions.assertThat;

import io.reverb.rdma.verbs.Access;
import io.reverb.rdma.verbs.CompletionQueue;
import io.reverb.rdma.verbs.MemoryRegion;
import io.reverb.rdma.verbs.PostResult;
import io.reverb.rdma.verbs.QpState;
import io.reverb.rdma.verbs.QueuePair;
import io.reverb.rdma.verbs.QueuePairAttributes;
import io.reverb.rdma.verbs.RecvRequest;
import io.reverb.rdma.verbs.SendRequest;
import io.reverb.rdma.verbs.VerbsConfig;
import io.reverb.rdma.verbs.VerbsContext;
import io.reverb.rdma.verbs.WcOpcode;
import io.reverb.rdma.verbs.WcStatus;
import io.reverb.rdma.verbs.WorkCompletions;
import io.reverb.rdma.verbs.WrOpcode;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * ACKs that ride on requests ({@link TcpFrame}'s {@code acks}), against a raw socket as the peer so that the frames
 * are exactly these: ACKs carried by the peer's request complete this side's requests; ACKs carried where they must
 * not be (an answer frame) or for requests that do not exist take the QP down; and this side's owed ACK rides on its
 * next request instead of leaving as a frame of its own.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class TcpAckPiggybackTest
{
    private static final long TIMEOUT_NANOS = TimeUnit.SECONDS.toNanos(20);

    private ServerSocket responder;
    private VerbsContext context;
    private Socket peer;
    private QueuePair qp;
    private CompletionQueue sendCq;
    private CompletionQueue recvCq;
    private MemoryRegion local;
    private final WorkCompletions wc = new WorkCompletions(16);

    /** The provider's settings; one test holds ACKs for longer. */
    private VerbsConfig config = VerbsConfig.defaults().withTcpAckHoldNanos(VerbsConfig.TCP_ACK_HOLD_MICROS_DEFAULT * 1000);

    @BeforeEach
    void connect() throws Exception
    {
        responder = new ServerSocket(0, 4, InetAddress.getLoopbackAddress());
        context = new TcpVerbsProvider().open(config);
        sendCq = context.createCq(16, null);
        recvCq = context.createCq(16, null);
        final String address = "127.0.0.1:" + responder.getLocalPort();
        final CompletableFuture<QueuePair> connected = CompletableFuture.supplyAsync(() ->
        {
            try
            {
                return context.connect(address, new QueuePairAttributes().pd(context.allocPd()).sendCq(sendCq)
                    .recvCq(recvCq), null);
            }
            catch (final IOException ex)
            {
                throw new UncheckedIOException(ex);
            }
        });
        peer = responder.accept();
        peer.setSoTimeout((int)TimeUnit.NANOSECONDS.toMillis(TIMEOUT_NANOS));
        assertThat(TcpHandshake.read(peer.getInputStream()).type).isEqualTo(TcpHandshake.CONNECT);
        TcpHandshake.of(TcpHandshake.ACCEPT, 16, 0, null).write(peer.getOutputStream());
        qp = connected.get(TIMEOUT_NANOS, TimeUnit.NANOSECONDS);
        local = qp.pd().allocate(4096, Access.LOCAL_WRITE);
    }

    @AfterEach
    void close() throws Exception
    {
        peer.close();
        context.close();
        responder.close();
    }

    @Test
    void shouldCompleteRequestsAnsweredByAcksOnThePeersRequest() throws Exception
    {
        postWrites(2);
        readFrames(2, 8);
        postReceive(7);

        writeFrame(TcpFrame.SEND, 2, 4);
        final long deadline = System.nanoTime() + TIMEOUT_NANOS;
        int sent = 0;
        while (sent < 2)
        {
            final int n = poll(sendCq, deadline);
            for (int i = 0; i < n; i++)
            {
                assertThat(wc.status(i)).isEqualTo(WcStatus.SUCCESS);
                assertThat(wc.opcode(i)).isEqualTo(WcOpcode.RDMA_WRITE);
            }
            sent += n;
        }
        assertThat(poll(recvCq, deadline)).isEqualTo(1);
        assertThat(wc.status(0)).isEqualTo(WcStatus.SUCCESS);
        assertThat(wc.wrId(0)).isEqualTo(7);
        assertThat(wc.byteLen(0)).isEqualTo(4);
        // Nothing to carry it: the ACK for the peer's SEND leaves alone once its hold time is over.
        final UnsafeBuffer ack = readFrames(1, 0);
        assertThat(TcpFrame.type(ack, 0)).isEqualTo(TcpFrame.ACK);
        assertThat(TcpFrame.length(ack, 0)).isEqualTo(1);
        assertThat(TcpFrame.acks(ack, 0)).isZero();
        assertThat(qp.state()).isEqualTo(QpState.RTS);
    }

    @Test
    void shouldCarryTheAckItOwesOnItsNextRequest() throws Exception
    {
        // Held for as long as the test needs: the next request must carry it.
        config = config.withTcpAckHoldNanos(TimeUnit.SECONDS.toNanos(1));
        peer.close();
        context.close();
        responder.close();
        connect();

        postReceive(1);
        writeFrame(TcpFrame.SEND_IMM, 0, 16);
        assertThat(poll(recvCq, System.nanoTime() + TIMEOUT_NANOS)).isEqualTo(1);
        postWrites(1);
        final UnsafeBuffer frame = readFrames(1, 8);
        assertThat(TcpFrame.type(frame, 0)).as("the WRITE comes first: no ACK frame of its own").isEqualTo(TcpFrame.WRITE);
        assertThat(TcpFrame.acks(frame, 0)).as("the ACK it carries").isEqualTo(1);
        assertThat(qp.state()).isEqualTo(QpState.RTS);
    }

    @Test
    void shouldTakeTheQpDownWhenAnAnswerFrameCarriesAcks() throws Exception
    {
        postWrites(1);
        readFrames(1, 8);
        writeFrame(TcpFrame.ACK, 1, 1);
        awaitDownAndHangUp();
    }

    @Test
    void shouldTakeTheQpDownWhenARequestCarriesAcksForRequestsThatDoNotExist() throws Exception
    {
        postWrites(2);
        readFrames(2, 8);
        postReceive(1);
        writeFrame(TcpFrame.SEND, 3, 4);
        awaitDownAndHangUp();
        // The two WRITEs: acknowledged before the third ACK was found to match nothing, or flushed.
        int completions = 0;
        final long deadline = System.nanoTime() + TIMEOUT_NANOS;
        while (completions < 2)
        {
            completions += poll(sendCq, deadline);
        }
        assertThat(completions).isEqualTo(2);
    }

    private void postWrites(final int count)
    {
        final SendRequest write = new SendRequest();
        for (int i = 0; i < count; i++)
        {
            write.reset().wrId(100 + i).opcode(WrOpcode.RDMA_WRITE).flags(SendRequest.FLAG_SIGNALED)
                .remoteAddress(1L << 32).rkey(0x180);
            write.setSge(local, 0, 8);
            assertThat(qp.postSend(write)).isEqualTo(PostResult.OK);
        }
    }

    private void postReceive(final long wrId)
    {
        final RecvRequest recv = new RecvRequest();
        recv.wrId(wrId).setSge(local, 1024, 64);
        assertThat(qp.postRecv(recv)).isEqualTo(PostResult.OK);
    }

    /** Reads {@code count} frames of {@code payload} bytes each; @return the last one's header. */
    private UnsafeBuffer readFrames(final int count, final int payload) throws IOException
    {
        final byte[] frame = new byte[TcpFrame.HEADER_LENGTH + payload];
        final DataInputStream in = new DataInputStream(peer.getInputStream());
        for (int i = 0; i < count; i++)
        {
            in.readFully(frame);
        }
        return new UnsafeBuffer(frame);
    }

    private void writeFrame(final int type, final int acks, final int length) throws IOException
    {
        final boolean payload = type != TcpFrame.ACK;
        final UnsafeBuffer frame = new UnsafeBuffer(new byte[TcpFrame.HEADER_LENGTH + (payload ? length : 0)]);
        TcpFrame.write(frame, 0, type, 0, acks, length, 42, 0, 0);
        peer.getOutputStream().write(frame.byteArray());
        peer.getOutputStream().flush();
    }

    private int poll(final CompletionQueue cq, final long deadline) throws InterruptedException
    {
        while (true)
        {
            final int n = cq.poll(wc);
            if (n > 0)
            {
                return n;
            }
            assertThat(System.nanoTime() - deadline).as("a completion in time").isNegative();
            Thread.sleep(1);
        }
    }

    private void awaitDownAndHangUp() throws Exception
    {
        final long deadline = System.nanoTime() + TIMEOUT_NANOS;
        while (qp.state() != QpState.ERROR)
        {
            assertThat(System.nanoTime() - deadline).as("the QP goes down in time").isNegative();
            Thread.sleep(1);
        }
        // Whatever it still owed, then end of stream.
        while (peer.getInputStream().read() != -1)
        {
            assertThat(System.nanoTime() - deadline).as("the QP hangs up in time").isNegative();
        }
    }
}
