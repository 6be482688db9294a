package io.reverb.rdma.provider.disni;

import static org.assertj.core.api.Assertions.assertThat;

import io.reverb.rdma.verbs.WorkCompletions;
import java.io.IOException;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * {@link DisniCompletionQueue} over DiSNi's own CQ classes with the native calls scripted ({@link FakeDisniCq}):
 * what a failing verb does to the CQ's queue pairs (issue 24, part 2 item 4).
 */
@Timeout(60)
class DisniCompletionQueueTest
{
    private final List<String> log = new CopyOnWriteArrayList<>();
    private final DisniVerbsContext context = FakeDisniCq.context("test-ctx");

    @Test
    void shouldTakeItsQueuePairsDownWithTheCauseOnceWhenAPollFails() throws Exception
    {
        final FakeDisniCq fake = new FakeDisniCq();
        final DisniCompletionQueue cq = fake.newCq(context, null, log);
        final Member first = new Member(1);
        final Member second = new Member(2);
        cq.attach(first);
        cq.attach(second);
        final WorkCompletions completions = new WorkCompletions(8);
        assertThat(cq.poll(completions)).isZero();
        assertThat(first.failures).isEmpty();

        fake.pollError = new IOException("Polling CQ failed");
        for (int i = 0; i < 5; i++)
        {
            assertThat(cq.poll(completions)).isZero();
            assertThat(completions.count()).isZero();
        }

        for (final Member member : List.of(first, second))
        {
            assertThat(member.failures).as("taken down once, with the cause").hasSize(1);
            assertThat(member.failures.get(0)).hasMessageContaining("ibv_poll_cq failed")
                .hasMessageContaining("Polling CQ failed").hasCauseReference(fake.pollError);
        }
        assertThat(log).as("logged once").hasSize(1);
        assertThat(log.get(0)).contains("ibv_poll_cq failed").contains("Polling CQ failed").contains("2 queue pair(s)");
        assertThat(fake.polls.get()).as("a broken CQ is not polled again").isEqualTo(2);
        assertThat(cq.failure()).isSameAs(first.failures.get(0));
        cq.close();
        assertThat(fake.destroyedCqOn).hasSize(1);
    }

    @Test
    void shouldTakeItsQueuePairsDownWhenArmingFails() throws Exception
    {
        final FakeDisniCq fake = new FakeDisniCq();
        final DisniCompletionChannel channel = new DisniCompletionChannel();
        final DisniCompletionQueue cq = fake.newCq(context, channel, log);
        final Member member = new Member(7);
        cq.attach(member);
        fake.notifyError = new IOException("ibv_req_notify_cq: EINVAL");

        cq.requestNotify(false);
        cq.requestNotify(true);

        assertThat(member.failures).hasSize(1);
        assertThat(member.failures.get(0)).hasMessageContaining("ibv_req_notify_cq failed").hasCauseReference(fake.notifyError);
        assertThat(log).hasSize(1);
        assertThat(fake.arms.get()).isEqualTo(1);
        assertThat(cq.poll(new WorkCompletions(4))).isZero();
        assertThat(fake.polls.get()).isZero();
        fake.releaseGetCqEvent.countDown();
        cq.close();
    }

    @Test
    void shouldNotFailAQueuePairThatLeftTheCqOrACqThatIsClosed() throws Exception
    {
        final FakeDisniCq fake = new FakeDisniCq();
        final DisniCompletionQueue cq = fake.newCq(context, null, log);
        final Member gone = new Member(3);
        cq.attach(gone);
        cq.detach(gone);
        fake.pollError = new IOException("boom");

        cq.poll(new WorkCompletions(4));
        assertThat(gone.failures).isEmpty();
        assertThat(log).hasSize(1).allMatch(line -> line.contains("0 queue pair(s)"));

        final FakeDisniCq other = new FakeDisniCq();
        final DisniCompletionQueue closed = other.newCq(context, null, log);
        closed.close();
        closed.fail("ibv_poll_cq", new IOException("late"));
        assertThat(log).hasSize(1);
    }

    /**
     * Issue 24, part 2 item 1: closing a CQ whose event pump sits in DiSNi's uninterruptible native wait must not
     * wait for it on the closing thread (the poller: a connection's two CQs cost it ~100 ms per close), and must
     * not leak the CQ either: the pump destroys the CQ and its channel on its way out.
     */
    @Test
    void shouldCloseWithoutWaitingForTheEventPumpWhichDestroysTheCqOnItsWayOut() throws Exception
    {
        final FakeDisniCq fake = new FakeDisniCq();
        final DisniCompletionChannel channel = new DisniCompletionChannel();
        final DisniCompletionQueue cq = fake.newCq(context, channel, log);
        cq.requestNotify(false);
        assertThat(fake.inGetCqEvent.await(30, TimeUnit.SECONDS)).isTrue();

        cq.close();

        assertThat(fake.destroyedCqOn).as("nothing destroyed under the pump's native wait").isEmpty();
        fake.releaseGetCqEvent.countDown();
        for (int i = 0; i < 3_000 && fake.destroyedChannelOn.isEmpty(); i++)
        {
            Thread.sleep(10);
        }
        assertThat(fake.destroyedCqOn).as("destroyed once, by the pump").containsExactly("test-ctx-cq-events");
        assertThat(fake.destroyedChannelOn).containsExactly("test-ctx-cq-events");
        assertThat(fake.getCqEventCalls.get()).as("the pump left after the wait it was in").isEqualTo(1);
        assertThat(log).isEmpty();
    }

    @Test
    void shouldDestroyAtOnceOnTheClosingThreadWithoutAPump() throws Exception
    {
        final FakeDisniCq fake = new FakeDisniCq();
        final DisniCompletionQueue cq = fake.newCq(context, new DisniCompletionChannel(), log);
        cq.poll(new WorkCompletions(4));

        cq.close();
        cq.close();

        assertThat(fake.destroyedCqOn).containsExactly(Thread.currentThread().getName());
        assertThat(fake.destroyedChannelOn).containsExactly(Thread.currentThread().getName());
        assertThat(cq.pumpStarted()).isFalse();
    }

    /** Issue 24, part 2 item 2: CQs are spread round-robin over the device's completion vectors (before: all on 0). */
    @Test
    void shouldSpreadCqsOverTheCompletionVectors()
    {
        final int[] vectors = new int[10];
        for (int i = 0; i < vectors.length; i++)
        {
            vectors[i] = DisniVerbsContext.compVector(i, 4);
        }
        assertThat(vectors).containsExactly(0, 1, 2, 3, 0, 1, 2, 3, 0, 1);
        assertThat(DisniVerbsContext.compVector(7, 1)).isZero();
        assertThat(DisniVerbsContext.compVector(7, 0)).isZero();
        assertThat(DisniVerbsContext.compVector(Integer.MAX_VALUE + 1, 3)).isBetween(0, 2);
    }

    /** A queue pair as the CQ sees it. */
    private static final class Member implements DisniCompletionQueue.Member
    {
        final int qpNum;
        final List<IOException> failures = new CopyOnWriteArrayList<>();

        Member(final int qpNum)
        {
            this.qpNum = qpNum;
        }

        @Override
        public int qpNum()
        {
            return qpNum;
        }

        @Override
        public void markError()
        {
        }

        @Override
        public void fail(final IOException cause)
        {
            failures.add(cause);
        }
    }
}
