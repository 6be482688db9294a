package io.reverb.rdma.provider.disni;

import static org.assertj.core.api.Assertions.assertThat;

import com.ibm.disni.verbs.RdmaCmEvent;
import io.reverb.common.LogLimiter;
import java.io.IOException;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** The rdma_cm dispatcher thread over a scripted event source: what stops it, and its tickers. */
class DisniCmEventDispatcherTest
{
    @Test
    void shouldKeepTheContextUsableAfterOneFailedEvent() throws Exception
    {
        final Script script = new Script(1, true);
        final CmEventDispatcher dispatcher = new CmEventDispatcher(null, script, false, "test-cm");
        dispatcher.start();
        try
        {
            assertThat(script.polledAtLeast(5)).isTrue();

            assertThat(dispatcher.failure()).as("a survived failure does not disable the context").isNull();
            assertThat(dispatcher.transientFailures()).isEqualTo(1);
            assertThat(dispatcher.lastTransientFailure()).hasMessage("bad event 1");
            assertThat(dispatcher.isStopped()).isFalse();
        }
        finally
        {
            dispatcher.stop();
        }
    }

    @Test
    void shouldGiveUpAndRecordTheFailureOnlyAfterConsecutiveFailures() throws Exception
    {
        final Script script = new Script(Integer.MAX_VALUE, true);
        final CmEventDispatcher dispatcher = new CmEventDispatcher(null, script, false, "test-cm");
        dispatcher.start();

        assertThat(script.gaveUp.await(30, TimeUnit.SECONDS)).isTrue();
        awaitStopped(dispatcher);

        assertThat(script.polls.get()).isEqualTo(CmEventDispatcher.MAX_CONSECUTIVE_FAILURES);
        assertThat(dispatcher.failure()).hasMessage("bad event " + CmEventDispatcher.MAX_CONSECUTIVE_FAILURES);
    }

    @Test
    void shouldGiveUpAtOnceWhenTheChannelIsClosed() throws Exception
    {
        final Script script = new Script(Integer.MAX_VALUE, false);
        final CmEventDispatcher dispatcher = new CmEventDispatcher(null, script, false, "test-cm");
        dispatcher.start();

        awaitStopped(dispatcher);

        assertThat(script.polls.get()).isEqualTo(1);
        assertThat(dispatcher.failure()).isNotNull();
    }

    @Test
    void shouldExpireParkedRequestsOnItsTickerWithoutAnotherRequestArriving() throws Exception
    {
        final CountDownLatch expired = new CountDownLatch(1);
        final ParkedRequests<String> parked = new ParkedRequests<>(0, 16, id -> expired.countDown());
        final CmEventDispatcher dispatcher = new CmEventDispatcher(null, new Script(0, true), false, "test-cm");
        dispatcher.addTicker(() -> parked.expire(System.nanoTime()));
        parked.park("10.0.0.2:40000", "request", System.nanoTime());
        dispatcher.start();
        try
        {
            assertThat(expired.await(30, TimeUnit.SECONDS)).isTrue();
            assertThat(parked.size()).isZero();
        }
        finally
        {
            dispatcher.stop();
        }
    }

    /** Issue 24, part 2 item 5: a lost event is logged, not only counted. */
    @Test
    void shouldLogALostEventOnce() throws Exception
    {
        final List<String> lines = new CopyOnWriteArrayList<>();
        final Script script = new Script(1, true);
        final CmEventDispatcher dispatcher = new CmEventDispatcher(null, script, false, "test-cm", lines::add);
        dispatcher.start();
        try
        {
            assertThat(script.polledAtLeast(5)).isTrue();
        }
        finally
        {
            dispatcher.stop();
        }

        assertThat(lines).hasSize(1);
        assertThat(lines.get(0)).contains("test-cm").contains("rdma_cm event was lost").contains("bad event 1")
            .contains("1 so far");
    }

    /** Lines about lost events are bounded; giving up is logged once, with its cause. */
    @Test
    void shouldBoundTheLinesAboutLostEventsAndLogGivingUp() throws Exception
    {
        final List<String> lines = new CopyOnWriteArrayList<>();
        final Script script = new Script(Integer.MAX_VALUE, true);
        final CmEventDispatcher dispatcher = new CmEventDispatcher(null, script, false, "test-cm", lines::add);
        dispatcher.start();
        awaitStopped(dispatcher);

        assertThat(dispatcher.transientFailures()).isEqualTo(CmEventDispatcher.MAX_CONSECUTIVE_FAILURES);
        // 19 lost events within far less than the 10 s interval: the burst, then the give-up line.
        assertThat(lines).hasSize(LogLimiter.BURST + 1);
        assertThat(lines.get(lines.size() - 1)).contains("giving up")
            .contains("bad event " + CmEventDispatcher.MAX_CONSECUTIVE_FAILURES);
    }

    /** A handler that throws loses its event: counted and logged, and the dispatcher goes on. */
    @Test
    void shouldLogAHandlerThatThrows() throws Exception
    {
        final List<String> lines = new CopyOnWriteArrayList<>();
        final CmEventDispatcher dispatcher = new CmEventDispatcher(null, new Script(0, true), false, "test-cm", lines::add);
        final CountDownLatch ticked = new CountDownLatch(1);
        dispatcher.addTicker(() ->
        {
            ticked.countDown();
            throw new IllegalStateException("ticker broke");
        });
        dispatcher.start();
        try
        {
            assertThat(ticked.await(30, TimeUnit.SECONDS)).isTrue();
            for (int i = 0; i < 3_000 && lines.isEmpty(); i++)
            {
                Thread.sleep(10);
            }
        }
        finally
        {
            dispatcher.stop();
        }
        assertThat(lines).isNotEmpty().hasSizeLessThanOrEqualTo(LogLimiter.BURST);
        assertThat(lines.get(0)).contains("ticker broke");
    }

    @Test
    void shouldRunQpDestructionOnlyWhileTheThreadIsOutsideGetCmEvent() throws Exception
    {
        // A connect that times out destroys its QP on the connecting thread, while the rdma_cm thread may be inside
        // rdma_get_cm_event modifying that QP for the CM's late CONNECT_RESPONSE (issue 37): they must not overlap.
        final InsideGetCmEvent source = new InsideGetCmEvent();
        final CmEventDispatcher dispatcher = new CmEventDispatcher(null, source, false, "test-cm");
        dispatcher.start();
        try
        {
            assertThat(source.entered.await(30, TimeUnit.SECONDS)).isTrue();
            final AtomicInteger overlapped = new AtomicInteger();
            final AtomicInteger ran = new AtomicInteger();
            final Thread connecting = new Thread(() -> dispatcher.outsideGetCmEvent(() ->
            {
                ran.incrementAndGet();
                if (source.inside.get())
                {
                    overlapped.incrementAndGet();
                }
            }), "connecting");
            connecting.start();
            // Until the connecting thread either waits (for the thread to leave getCmEvent) or has run the action.
            while (connecting.getState() != Thread.State.WAITING && connecting.isAlive())
            {
                Thread.onSpinWait();
            }
            assertThat(ran.get()).as("nothing runs while the thread is inside getCmEvent").isZero();

            source.release.countDown();
            connecting.join(30_000);

            assertThat(connecting.isAlive()).isFalse();
            assertThat(ran.get()).isEqualTo(1);
            assertThat(overlapped.get()).isZero();
        }
        finally
        {
            source.release.countDown();
            dispatcher.stop();
        }
    }

    @Test
    void shouldStopOnlyOnceTheThreadHasLeftASlowPollSlice()
    {
        // A poll slice that takes far longer than POLL_MS, as on a machine short of CPU: stop() must still return
        // with the thread gone, since the context destroys its event channel only then (else it leaks).
        final CountDownLatch polling = new CountDownLatch(1);
        final CmEventDispatcher dispatcher = new CmEventDispatcher(null, new CmEventDispatcher.EventSource()
        {
            @Override
            public RdmaCmEvent next(final int timeoutMs)
            {
                polling.countDown();
                try
                {
                    // Slow work, not synchronisation: longer than stop() used to wait (4 slices).
                    Thread.sleep(8L * CmEventDispatcher.POLL_MS);
                }
                catch (final InterruptedException ex)
                {
                    Thread.currentThread().interrupt();
                }
                return null;
            }

            @Override
            public boolean isOpen()
            {
                return true;
            }
        }, false, "test-cm");
        dispatcher.start();
        try
        {
            polling.await();
        }
        catch (final InterruptedException ex)
        {
            throw new AssertionError(ex);
        }

        dispatcher.stop();

        assertThat(dispatcher.isStopped()).isTrue();
    }

    /** The first poll stays inside "getCmEvent" until released; later ones return at once. */
    private static final class InsideGetCmEvent implements CmEventDispatcher.EventSource
    {
        final AtomicBoolean inside = new AtomicBoolean();
        final CountDownLatch entered = new CountDownLatch(1);
        final CountDownLatch release = new CountDownLatch(1);

        @Override
        public RdmaCmEvent next(final int timeoutMs)
        {
            inside.set(true);
            try
            {
                entered.countDown();
                release.await();
                Thread.sleep(1);
            }
            catch (final InterruptedException ex)
            {
                Thread.currentThread().interrupt();
            }
            finally
            {
                inside.set(false);
            }
            return null;
        }

        @Override
        public boolean isOpen()
        {
            return true;
        }
    }

    private static void awaitStopped(final CmEventDispatcher dispatcher) throws InterruptedException
    {
        for (int i = 0; i < 3_000 && !dispatcher.isStopped(); i++)
        {
            Thread.sleep(10);
        }
        assertThat(dispatcher.isStopped()).isTrue();
    }

    /** Fails the first {@code failures} polls, then reports no event. */
    private static final class Script implements CmEventDispatcher.EventSource
    {
        final int failures;
        final boolean open;
        final AtomicInteger polls = new AtomicInteger();
        final CountDownLatch gaveUp = new CountDownLatch(1);
        private final CountDownLatch fivePolls = new CountDownLatch(5);

        Script(final int failures, final boolean open)
        {
            this.failures = failures;
            this.open = open;
        }

        @Override
        public RdmaCmEvent next(final int timeoutMs) throws IOException
        {
            final int poll = polls.incrementAndGet();
            fivePolls.countDown();
            if (poll == CmEventDispatcher.MAX_CONSECUTIVE_FAILURES || !open)
            {
                gaveUp.countDown();
            }
            if (poll <= failures)
            {
                throw new IOException("bad event " + poll);
            }
            try
            {
                Thread.sleep(1);
            }
            catch (final InterruptedException ex)
            {
                Thread.currentThread().interrupt();
            }
            return null;
        }

        @Override
        public boolean isOpen()
        {
            return open;
        }

        boolean polledAtLeast(final int count) throws InterruptedException
        {
            return count <= 5 && fivePolls.await(30, TimeUnit.SECONDS);
        }
    }
}
