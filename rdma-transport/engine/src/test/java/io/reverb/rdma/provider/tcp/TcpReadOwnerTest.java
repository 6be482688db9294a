package io.reverb.rdma.provider.tcp;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.nio.channels.Pipe;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Supplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The model test of the read hand-off ({@link TcpReadOwner}): every transition of its javadoc's table, one by one,
 * including the interleavings that needed race fixes (a release that finds the wire taken, a poll or a lease expiry
 * that overtakes it, the channel's watch turned on while the poller is blocked in it, a channel closed under the QP),
 * and a counted run of the poller and the NIC racing for the wire.
 */
class TcpReadOwnerTest
{
    private static final long LEASE = 20_000_000;

    private final TcpWireLock wire = new TcpWireLock();
    private FakeChannel channel;
    private Pipe pipe;
    private TcpReadOwner owner;

    @BeforeEach
    void setUp() throws IOException
    {
        channel = new FakeChannel();
        pipe = Pipe.open();
        pipe.source().configureBlocking(false);
        owner = new TcpReadOwner(channel, wire);
    }

    @AfterEach
    void tearDown() throws IOException
    {
        pipe.source().close();
        pipe.sink().close();
        channel.selector.close();
    }

    @Test
    void startsWithTheNicReading()
    {
        assertThat(owner.state()).isEqualTo(TcpReadOwner.NIC);
        assertThat(owner.pollerReading()).isFalse();
        assertThat(owner.pollerAtWork()).isFalse();
        assertThat(onWire(() -> owner.leaseCheck(0, LEASE))).as("nothing to time").isEqualTo(Long.MAX_VALUE);
    }

    @Test
    void aPollTakesTheReadingOverOnceAndStartsTheLease()
    {
        assertThat(onWire(() -> owner.polled(100))).as("NIC -> POLLER: taken").isTrue();
        assertThat(owner.state()).isEqualTo(TcpReadOwner.POLLER);
        assertThat(owner.pollerReading()).isTrue();
        assertThat(owner.pollerAtWork()).isTrue();
        assertThat(onWire(() -> owner.polled(200))).as("POLLER -> POLLER: not taken again").isFalse();
        assertThat(owner.state()).isEqualTo(TcpReadOwner.POLLER);
    }

    @Test
    void theLeaseRunsOutWhenThePollerStopsPolling()
    {
        onWire(() -> owner.polled(1_000));
        assertThat(onWire(() -> owner.leaseCheck(1_010, LEASE))).isEqualTo(LEASE - 10);
        assertThat(onWire(() -> owner.leaseCheck(1_000 + LEASE, LEASE))).isEqualTo(TcpReadOwner.EXPIRED);
        assertThat(onWire(owner::release)).as("the NIC takes the reading back").isTrue();
        assertThat(owner.state()).isEqualTo(TcpReadOwner.NIC);
    }

    @Test
    void eachPollRenewsTheLease()
    {
        onWire(() -> owner.polled(0));
        onWire(() -> owner.polled(LEASE / 2));
        assertThat(onWire(() -> owner.leaseCheck(LEASE, LEASE))).as("polled since the last check").isEqualTo(LEASE);
        assertThat(onWire(() -> owner.leaseCheck(2 * LEASE, LEASE))).isEqualTo(TcpReadOwner.EXPIRED);
    }

    @Test
    void aPollerSleepingInItsWatchingChannelKeepsTheLease()
    {
        pollerSleepsWatching();
        channel.waiting = true;
        assertThat(onWire(() -> owner.leaseCheck(100 * LEASE, LEASE))).as("the channel wakes it").isEqualTo(Long.MAX_VALUE);
        assertThat(owner.state()).isEqualTo(TcpReadOwner.POLLER);
        channel.waiting = false;
        assertThat(onWire(() -> owner.leaseCheck(101 * LEASE, LEASE))).as("awake, not polling: the lease runs")
            .isEqualTo(TcpReadOwner.EXPIRED);
    }

    @Test
    void aChannelThatFiredWatchesNoMoreUntilTheNextPoll()
    {
        pollerSleepsWatching();
        channel.waiting = true;
        onWire(() ->
        {
            owner.channelFired();
            owner.updateChannelInterest(false);
        });
        assertThat(owner.channelWatching()).as("fires once").isFalse();
        assertThat(interestOps()).isZero();
        assertThat(onWire(() -> owner.leaseCheck(100 * LEASE, LEASE))).as("sleeping, not watching: the lease ran out")
            .isEqualTo(TcpReadOwner.EXPIRED);
        onWire(() ->
        {
            owner.polled(100 * LEASE);
            owner.updateChannelInterest(false);
        });
        assertThat(owner.channelWatching()).as("re-armed by the poll").isTrue();
        assertThat(interestOps()).isEqualTo(SelectionKey.OP_READ);
    }

    @Test
    void aReleaseWithTheWireGivesTheReadingBackAtOnce()
    {
        onWire(() -> owner.polled(0));
        assertThat(onWire(owner::release)).as("POLLER -> NIC").isTrue();
        assertThat(owner.state()).isEqualTo(TcpReadOwner.NIC);
        assertThat(onWire(owner::release)).as("NIC -> NIC: nothing to give back").isFalse();
        assertThat(onWire(() -> owner.polled(1))).as("the next poll takes it over again").isTrue();
    }

    @Test
    void aReleaseThatFindsTheWireTakenWaitsForTheNicsNextCycle() throws Exception
    {
        onWire(() -> owner.polled(0));
        try (WireHolder nic = new WireHolder(wire))
        {
            assertThat(wire.tryLock()).as("the NIC holds the wire").isFalse();
            assertThat(owner.requestRelease()).as("POLLER -> RELEASING: the NIC must be woken").isTrue();
            assertThat(owner.state()).isEqualTo(TcpReadOwner.RELEASING);
            assertThat(owner.pollerReading()).as("nobody else watches the socket until it is applied").isTrue();
            assertThat(owner.pollerAtWork()).as("so the NIC must not skip this QP").isFalse();
            assertThat(owner.releasePending()).isTrue();
            assertThat(owner.requestRelease()).as("asked once").isFalse();
        }
        assertThat(onWire(() -> owner.leaseCheck(1, LEASE))).as("a fresh lease, yet the release waits")
            .isEqualTo(TcpReadOwner.EXPIRED);
        assertThat(onWire(owner::release)).as("RELEASING -> NIC").isTrue();
        assertThat(owner.state()).isEqualTo(TcpReadOwner.NIC);
        assertThat(owner.releasePending()).isFalse();
    }

    @Test
    void aPollBeforeTheNicAppliesTheReleaseWithdrawsIt()
    {
        onWire(() -> owner.polled(0));
        assertThat(owner.requestRelease()).isTrue();
        assertThat(onWire(() -> owner.polled(LEASE))).as("RELEASING -> POLLER: still the poller's, not a take-over")
            .isFalse();
        assertThat(owner.state()).isEqualTo(TcpReadOwner.POLLER);
        assertThat(owner.releasePending()).isFalse();
        assertThat(onWire(() -> owner.leaseCheck(LEASE + 1, LEASE))).as("the NIC finds the lease renewed")
            .isEqualTo(LEASE);
    }

    @Test
    void aReleaseRequestAfterTheNicTookTheReadingBackChangesNothing()
    {
        onWire(() -> owner.polled(0));
        assertThat(onWire(() -> owner.leaseCheck(LEASE, LEASE))).isEqualTo(TcpReadOwner.EXPIRED);
        onWire(owner::release);
        assertThat(owner.requestRelease()).as("NIC: nothing to give back, no NIC wake-up").isFalse();
        assertThat(owner.state()).isEqualTo(TcpReadOwner.NIC);
        assertThat(owner.releasePending()).isFalse();
    }

    @Test
    void closeIsTerminalFromEveryState()
    {
        for (final int from : new int[] {TcpReadOwner.NIC, TcpReadOwner.POLLER, TcpReadOwner.RELEASING})
        {
            final TcpReadOwner o = new TcpReadOwner(channel, wire);
            if (from != TcpReadOwner.NIC)
            {
                onWire(() -> o.polled(0));
            }
            if (from == TcpReadOwner.RELEASING)
            {
                o.requestRelease();
            }
            assertThat(o.state()).isEqualTo(from);
            onWire(o::close);
            assertThat(o.state()).as("from " + from).isEqualTo(TcpReadOwner.CLOSED);
            assertThat(onWire(() -> o.polled(1))).isFalse();
            assertThat(o.requestRelease()).isFalse();
            assertThat(onWire(o::release)).isFalse();
            assertThat(onWire(() -> o.leaseCheck(LEASE * 10, LEASE))).isEqualTo(Long.MAX_VALUE);
            assertThat(o.state()).isEqualTo(TcpReadOwner.CLOSED);
            assertThat(o.pollerReading()).isFalse();
        }
    }

    @Test
    void closeCancelsTheChannelRegistration()
    {
        pollerSleepsWatching();
        final SelectionKey key = pipe.source().keyFor(channel.selector);
        assertThat(key.isValid()).isTrue();
        onWire(owner::close);
        assertThat(key.isValid()).isFalse();
    }

    @Test
    void registersWithTheChannelOnlyWhileThePollerReads()
    {
        onWire(() -> owner.registerWithChannel(pipe.source(), null));
        assertThat(owner.registeredWithChannel()).as("the NIC reads: no registration").isFalse();
        onWire(() -> owner.polled(0));
        assertThat(owner.registeredWithChannel()).as("a poller that does not sleep (BUSY) holds none").isFalse();
        onWire(() -> owner.registerWithChannel(pipe.source(), null));
        assertThat(owner.registeredWithChannel()).isTrue();
        assertThat(interestOps()).as("watching starts with the interest update").isZero();
        onWire(() -> owner.registerWithChannel(pipe.source(), null));
        assertThat(channel.selector.keys()).as("registered once").hasSize(1);

        final TcpReadOwner noChannel = new TcpReadOwner(null, wire);
        onWire(() ->
        {
            noChannel.polled(0);
            noChannel.registerWithChannel(pipe.source(), null);
            noChannel.updateChannelInterest(false);
        });
        assertThat(noChannel.registeredWithChannel()).as("a CQ without a channel").isFalse();
        assertThat(noChannel.channelWatching()).isFalse();
    }

    @Test
    void turningTheWatchOnWakesAPollerBlockedInTheChannel()
    {
        onWire(() ->
        {
            owner.polled(0);
            owner.registerWithChannel(pipe.source(), null);
            owner.updateChannelInterest(true);
        });
        assertThat(owner.channelWatching()).as("an RNR wait stops reading").isFalse();
        channel.waiting = true; // the poller blocks in the channel's select
        onWire(() -> owner.updateChannelInterest(false)); // the NIC ends the RNR wait
        assertThat(owner.channelWatching()).isTrue();
        assertThat(interestOps()).isEqualTo(SelectionKey.OP_READ);
        assertThat(channel.wakeupsWhileWaiting).as("a blocked select does not see a changed interest set").isEqualTo(1);
        onWire(() -> owner.updateChannelInterest(false));
        assertThat(channel.wakeupsWhileWaiting).as("no change, no wake-up").isEqualTo(1);
    }

    @Test
    void aChannelClosedUnderTheQpIsNotAnError() throws IOException
    {
        pollerSleepsWatching();
        onWire(() ->
        {
            owner.channelFired();
            owner.updateChannelInterest(false);
        });
        channel.selector.close(); // the poller's channel closes (another thread) while the QP goes down
        onWire(() ->
        {
            owner.polled(1);
            owner.updateChannelInterest(false);
            assertThat(owner.release()).isTrue();
            owner.updateChannelInterest(false);
            owner.close();
        });
        assertThat(owner.channelWatching()).isFalse();
        assertThat(owner.state()).isEqualTo(TcpReadOwner.CLOSED);
        // Registering with a closed channel is not an error either.
        final TcpReadOwner late = new TcpReadOwner(channel, wire);
        onWire(() ->
        {
            late.polled(0);
            late.registerWithChannel(pipe.source(), null);
        });
        assertThat(late.registeredWithChannel()).isFalse();
    }

    @Test
    void everyTransitionButARequestNeedsTheWire()
    {
        assumeTrue(TcpReadOwner.class.desiredAssertionStatus(), "needs -ea (surefire runs with assertions on)");
        assertThatThrownBy(() -> owner.polled(0)).isInstanceOf(AssertionError.class);
        assertThatThrownBy(owner::release).isInstanceOf(AssertionError.class);
        assertThatThrownBy(() -> owner.leaseCheck(0, LEASE)).isInstanceOf(AssertionError.class);
        assertThatThrownBy(owner::close).isInstanceOf(AssertionError.class);
        assertThat(owner.requestRelease()).as("the one transition without the wire").isFalse();
    }

    /**
     * The poller (tries the wire; without it, requests the release) and the NIC (waits for the wire, applies a
     * release or an expired lease) race: every take-over is matched by exactly one give-back, and a release
     * requested last is applied by the NIC's next cycle. The NIC waits, every {@code 1024} cycles, until the poller has
     * taken the reading over once more, so the two interleave however the threads are scheduled (a busy 2-core machine
     * once let the NIC hold the wire through every one of the poller's tries).
     */
    @Test
    void thePollerAndTheNicRacingForTheWireLoseNoTransition() throws Exception
    {
        final int rounds = 200_000;
        final AtomicLong takes = new AtomicLong();
        final AtomicLong gives = new AtomicLong();
        final AtomicReference<Throwable> failure = new AtomicReference<>();
        final AtomicBoolean nicDone = new AtomicBoolean();
        final Thread nic = new Thread(() ->
        {
            try
            {
                for (int i = 0; i < rounds; i++)
                {
                    if ((i & 1023) == 1023)
                    {
                        final long seen = takes.get();
                        while (takes.get() == seen)
                        {
                            Thread.onSpinWait(); // the wire is free: the poller takes the reading over
                        }
                    }
                    wire.lock();
                    try
                    {
                        // A 1 ns lease, late clock: the NIC takes the reading back unless polled since its last check.
                        if (owner.leaseCheck(Long.MAX_VALUE / 4 + i, 1) == TcpReadOwner.EXPIRED && owner.release())
                        {
                            gives.incrementAndGet();
                        }
                    }
                    finally
                    {
                        wire.unlock();
                    }
                }
            }
            catch (final Throwable t)
            {
                failure.set(t);
            }
            finally
            {
                nicDone.set(true);
            }
        }, "model-nic");
        nic.start();
        for (int i = 0; !nicDone.get() || i < rounds; i++)
        {
            if (wire.tryLock())
            {
                try
                {
                    if (owner.polled(i))
                    {
                        takes.incrementAndGet();
                    }
                    if ((i & 7) == 7 && owner.release())
                    {
                        gives.incrementAndGet(); // idle reads: the poller gives it back itself
                    }
                }
                finally
                {
                    wire.unlock();
                }
            }
            else
            {
                owner.requestRelease(); // the NIC holds the wire: it applies the release
            }
        }
        nic.join(TimeUnit.MINUTES.toMillis(5));
        assertThat(nic.isAlive()).isFalse();
        assertThat(failure.get()).isNull();
        assertThat(takes.get()).as("the poller took the reading over, at least once per 1024 NIC cycles")
            .isGreaterThanOrEqualTo(rounds / 1024);
        final int state = owner.state();
        assertThat(takes.get() - gives.get()).as("take-overs not given back, state " + state)
            .isEqualTo(state == TcpReadOwner.NIC ? 0 : 1);
        // The poller's last word is a release without the wire: the NIC's next cycle applies it.
        owner.requestRelease();
        onWire(() ->
        {
            if (owner.leaseCheck(Long.MAX_VALUE / 2, LEASE) == TcpReadOwner.EXPIRED)
            {
                owner.release();
            }
        });
        assertThat(owner.state()).isEqualTo(TcpReadOwner.NIC);
    }

    private void pollerSleepsWatching()
    {
        onWire(() ->
        {
            owner.polled(0);
            owner.registerWithChannel(pipe.source(), null);
            owner.updateChannelInterest(false);
        });
        assertThat(owner.channelWatching()).isTrue();
        assertThat(interestOps()).isEqualTo(SelectionKey.OP_READ);
    }

    private int interestOps()
    {
        return pipe.source().keyFor(channel.selector).interestOps();
    }

    private void onWire(final Runnable step)
    {
        wire.lock();
        try
        {
            step.run();
        }
        finally
        {
            wire.unlock();
        }
    }

    private <T> T onWire(final Supplier<T> step)
    {
        wire.lock();
        try
        {
            return step.get();
        }
        finally
        {
            wire.unlock();
        }
    }

    /** The completion channel as the hand-off sees it; counts the wake-ups of a poller blocked in it. */
    private static final class FakeChannel implements TcpReadOwner.Channel
    {
        final Selector selector;
        volatile boolean waiting;
        int wakeupsWhileWaiting;

        FakeChannel() throws IOException
        {
            selector = Selector.open();
        }

        @Override
        public Selector selector()
        {
            return selector;
        }

        @Override
        public boolean waiting()
        {
            return waiting;
        }

        @Override
        public void wakeWaiter()
        {
            if (waiting)
            {
                wakeupsWhileWaiting++;
                selector.wakeup();
            }
        }
    }

    /** Another thread (the NIC at work) holds the wire until closed. */
    private static final class WireHolder implements AutoCloseable
    {
        private final CountDownLatch held = new CountDownLatch(1);
        private final CountDownLatch done = new CountDownLatch(1);
        private final Thread thread;

        WireHolder(final TcpWireLock wire) throws InterruptedException
        {
            thread = new Thread(() ->
            {
                wire.lock();
                try
                {
                    held.countDown();
                    done.await();
                }
                catch (final InterruptedException ignore)
                {
                    Thread.currentThread().interrupt();
                }
                finally
                {
                    wire.unlock();
                }
            }, "model-nic-holding-the-wire");
            thread.start();
            assertThat(held.await(1, TimeUnit.MINUTES)).isTrue();
        }

        @Override
        public void close() throws InterruptedException
        {
            done.countDown();
            thread.join(TimeUnit.MINUTES.toMillis(1));
            assertThat(thread.isAlive()).isFalse();
        }
    }
}
