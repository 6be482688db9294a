package io.reverb.rdma.provider.tcp;

import static org.assertj.core.api.Assertions.assertThat;

import io.reverb.rdma.verbs.Access;
import io.reverb.rdma.verbs.CompletionQueue;
import io.reverb.rdma.verbs.ConnectionListener;
import io.reverb.rdma.verbs.ConnectionRequest;
import io.reverb.rdma.verbs.MemoryRegion;
import io.reverb.rdma.verbs.PostResult;
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
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Several QPs of one pair of contexts, each side driven by its own thread, all at once and in both
 * directions: every round RDMA-writes a block into the peer's memory and then SENDs its sequence
 * number. The receiver checks that sends arrive in order and that the write before each send is
 * already in place when the send is delivered (RC ordering: both ends of the block hold that round or
 * a later one), while both NIC threads multiplex the
 * sockets with writes blocked and unblocked in both directions.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class TcpConcurrencyTest
{
    private static final long TIMEOUT_NANOS = TimeUnit.SECONDS.toNanos(40);
    private static final int PAIRS = 3;
    private static final int ROUNDS = 100;
    private static final int BLOCK = 128 * 1024;
    private static final int RECEIVES = 8;

    @Test
    void shouldCarryFullDuplexTrafficOnSeveralQpsFromSeveralThreadsInOrder() throws Exception
    {
        // A receive is always reposted promptly, but the machine may be loaded: wait long before RNR.
        final VerbsConfig config = VerbsConfig.defaults().withRnrRetryNanos(TimeUnit.SECONDS.toNanos(20));
        final ExecutorService threads = Executors.newFixedThreadPool(PAIRS * 2);
        try (VerbsContext server = new TcpVerbsProvider().open(config);
            VerbsContext client = new TcpVerbsProvider().open(config))
        {
            final List<Side> sides = new ArrayList<>();
            for (int p = 0; p < PAIRS; p++)
            {
                final Side[] pair = connect(server, client);
                pair[0].peer = pair[1];
                pair[1].peer = pair[0];
                sides.add(pair[0]);
                sides.add(pair[1]);
            }
            final List<Future<Integer>> results = new ArrayList<>();
            for (final Side side : sides)
            {
                results.add(threads.submit(side::run));
            }
            for (final Future<Integer> result : results)
            {
                assertThat(result.get(TIMEOUT_NANOS, TimeUnit.NANOSECONDS)).as("rounds received in order").isEqualTo(ROUNDS);
            }
        }
        finally
        {
            threads.shutdownNow();
        }
    }

    private static Side[] connect(final VerbsContext server, final VerbsContext client) throws Exception
    {
        try (ConnectionListener listener = server.listen("127.0.0.1:0", 4))
        {
            final CompletableFuture<Side> accepted = CompletableFuture.supplyAsync(() ->
            {
                try
                {
                    final ConnectionRequest request = listener.accept(TIMEOUT_NANOS);
                    return new Side(server, attributes -> request.accept(attributes, null));
                }
                catch (final Exception ex)
                {
                    throw new IllegalStateException(ex);
                }
            });
            final Side connector = new Side(client, attributes -> client.connect(listener.localAddress(), attributes, null));
            return new Side[] {accepted.get(TIMEOUT_NANOS, TimeUnit.NANOSECONDS), connector};
        }
    }

    @FunctionalInterface
    private interface QpFactory
    {
        QueuePair create(QueuePairAttributes attributes) throws Exception;
    }

    /** One end of a connection and the thread that drives it. */
    private static final class Side
    {
        final QueuePair qp;
        final CompletionQueue cq;
        final MemoryRegion target;
        final MemoryRegion source;
        final MemoryRegion receives;
        Side peer;

        Side(final VerbsContext context, final QpFactory factory) throws Exception
        {
            final var pd = context.allocPd();
            cq = context.createCq(256, null);
            target = pd.allocate(BLOCK, Access.LOCAL_WRITE | Access.REMOTE_WRITE);
            source = pd.allocate(BLOCK + 8, Access.LOCAL_WRITE);
            receives = pd.allocate(RECEIVES * 64, Access.LOCAL_WRITE);
            qp = factory.create(new QueuePairAttributes().pd(pd).sendCq(cq).recvCq(cq).maxSendWr(16).maxRecvWr(RECEIVES));
            final RecvRequest recv = new RecvRequest();
            for (int i = 0; i < RECEIVES; i++)
            {
                recv.wrId(i).setSge(receives, i * 64, 64);
                assertThat(qp.postRecv(recv)).isEqualTo(PostResult.OK);
            }
        }

        /** @return rounds received in order with their write in place. */
        int run()
        {
            final SendRequest write = new SendRequest();
            final SendRequest send = new SendRequest();
            final RecvRequest recv = new RecvRequest();
            final WorkCompletions wc = new WorkCompletions(16);
            final UnsafeBuffer src = source.buffer();
            int round = 0;
            int received = 0;
            int pendingSends = 0;
            final long deadline = System.nanoTime() + TIMEOUT_NANOS;
            while (round < ROUNDS || received < ROUNDS || pendingSends > 0)
            {
                if (round < ROUNDS && pendingSends == 0)
                {
                    // The block's first and last words carry the round, so the receiver can check both ends.
                    src.putLong(0, round);
                    src.putLong(BLOCK - 8, round);
                    src.putLong(BLOCK, round);
                    write.reset().wrId(round).opcode(WrOpcode.RDMA_WRITE).flags(0)
                        .remoteAddress(peer.target.address()).rkey(peer.target.rkey());
                    write.setSge(source, 0, BLOCK);
                    assertThat(qp.postSend(write)).isEqualTo(PostResult.OK);
                    send.reset().wrId(round).opcode(WrOpcode.SEND).flags(SendRequest.FLAG_SIGNALED);
                    send.setSge(source, BLOCK, 8);
                    assertThat(qp.postSend(send)).isEqualTo(PostResult.OK);
                    pendingSends = 1;
                    round++;
                }
                final int n = cq.poll(wc);
                for (int i = 0; i < n; i++)
                {
                    assertThat(wc.status(i)).as("completion %s", wc.opcode(i)).isEqualTo(WcStatus.SUCCESS);
                    if (wc.opcode(i) == WcOpcode.SEND)
                    {
                        pendingSends--;
                        continue;
                    }
                    final int slot = (int)wc.wrId(i);
                    assertThat(receives.buffer().getLong(slot * 64)).as("send order").isEqualTo(received);
                    // The peer may already have written later rounds (it runs up to RECEIVES rounds ahead of
                    // this thread), never an earlier one: round r's write lands before round r's send.
                    assertThat(target.buffer().getLong(0)).as("write placed before the send")
                        .isBetween((long)received, (long)received + RECEIVES);
                    assertThat(target.buffer().getLong(BLOCK - 8)).as("end of the write placed before the send")
                        .isBetween((long)received, (long)received + RECEIVES);
                    received++;
                    recv.wrId(slot).setSge(receives, slot * 64, 64);
                    assertThat(qp.postRecv(recv)).isEqualTo(PostResult.OK);
                }
                if (n == 0)
                {
                    assertThat(System.nanoTime() - deadline).as("progress (round %d, received %d)", round, received)
                        .isNegative();
                    Thread.yield();
                }
            }
            return received;
        }
    }
}
