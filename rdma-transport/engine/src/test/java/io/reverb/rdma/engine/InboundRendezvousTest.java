package io.reverb.rdma.engine;

import static org.assertj.core.api.Assertions.assertThat;

import io.reverb.rdma.verbs.Access;
import io.reverb.rdma.verbs.MemoryRegion;
import io.reverb.rdma.verbs.ProtectionDomain;
import io.reverb.rdma.verbs.VerbsContext;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.Test;

/**
 * Admission of RTS (issue 13, item 3) without a fabric: a fake protection domain counts (and can fail)
 * registrations, the allocator is a queue the test runs by hand, and wake-ups are counted.
 */
class InboundRendezvousTest
{
    private static final int KIB = 1024;
    private static final int CLASS = 64 * KIB;

    /** A protection domain on the heap that can be told to fail its next registration. */
    private static final class FakePd implements ProtectionDomain
    {
        int allocations;
        int live;
        Error failNext;

        @Override
        public VerbsContext context()
        {
            return null;
        }

        @Override
        public MemoryRegion allocate(final int length, final int access) throws IOException
        {
            allocations++;
            if (failNext != null)
            {
                final Error e = failNext;
                failNext = null;
                throw e;
            }
            live++;
            final FakePd pd = this;
            final ByteBuffer memory = ByteBuffer.allocate(length);
            return new MemoryRegion()
            {
                private boolean closed;

                public ProtectionDomain pd()
                {
                    return pd;
                }

                public long address()
                {
                    return 4096L * allocations;
                }

                public int length()
                {
                    return length;
                }

                public int lkey()
                {
                    return 1;
                }

                public int rkey()
                {
                    return 2;
                }

                public int access()
                {
                    return access;
                }

                public ByteBuffer byteBuffer()
                {
                    return memory;
                }

                public UnsafeBuffer buffer()
                {
                    return new UnsafeBuffer(memory);
                }

                public boolean isRegistered()
                {
                    return !closed;
                }

                public void close()
                {
                    if (!closed)
                    {
                        closed = true;
                        live--;
                    }
                }
            };
        }

        @Override
        public void close()
        {
        }
    }

    /** One connection's receive side over a shared budget. */
    private static final class Side implements InboundRendezvous.Answers
    {
        final FakePd pd = new FakePd();
        final AtomicInteger wakeUps = new AtomicInteger();
        final List<String> answers = new ArrayList<>();
        final BufferPool pool;
        final InboundRendezvous inbound;

        Side(final RendezvousBudget budget, final ArrayDeque<Runnable> allocator, final long poolBytes)
        {
            pool = new BufferPool(pd, budget, Access.LOCAL_WRITE | Access.REMOTE_WRITE, CLASS, 4 * CLASS, poolBytes, null);
            inbound = new InboundRendezvous(pool, budget, allocator::add, () ->
            {
                wakeUps.incrementAndGet();
                inbound().grantQueued(); // what the poller does at its next attention check
            }, 4 * CLASS, EngineConnection.MAX_PIPELINED_RENDEZVOUS, 1_000_000_000L, new ConnectionStats(), this);
        }

        InboundRendezvous inbound()
        {
            return inbound;
        }

        @Override
        public void clearToSend(final int id, final long address, final int rkey, final int length)
        {
            answers.add("CTS " + id + " " + length);
        }

        @Override
        public void refuse(final int id, final int code, final int limit)
        {
            answers.add("REFUSE " + id + " code " + code + " limit " + limit);
        }
    }

    private static void runAll(final ArrayDeque<Runnable> allocator)
    {
        Runnable task;
        while ((task = allocator.pollFirst()) != null)
        {
            task.run();
        }
    }

    @Test
    void shouldAllocateOffTheCallingThreadAndGrantWhenTheAllocationLands()
    {
        final ArrayDeque<Runnable> allocator = new ArrayDeque<>();
        final RendezvousBudget budget = new RendezvousBudget(8 * CLASS);
        final Side side = new Side(budget, allocator, 4 * CLASS);
        assertThat(side.inbound.onRequestToSend(1, CLASS)).isNull();
        assertThat(side.pd.allocations).as("nothing allocated on the poller").isZero();
        assertThat(allocator).hasSize(1);
        assertThat(budget.reservedBytes()).as("booked before allocating").isEqualTo(CLASS);
        runAll(allocator);
        assertThat(side.answers).containsExactly("CTS 1 " + CLASS);
        // A buffer that comes back is kept for the next RTS: no second registration.
        side.inbound.release(side.inbound.take(1));
        assertThat(side.inbound.onRequestToSend(2, CLASS - 1)).isNull();
        assertThat(side.answers).containsExactly("CTS 1 " + CLASS, "CTS 2 " + CLASS);
        assertThat(side.pd.allocations).isEqualTo(1);
        side.inbound.releaseAll();
        side.pool.close();
        assertThat(budget.reservedBytes()).isZero();
        assertThat(side.pd.live).isZero();
    }

    @Test
    void shouldReportAGrantNotWrittenWithinTheWriteTimeout()
    {
        final ArrayDeque<Runnable> allocator = new ArrayDeque<>();
        final RendezvousBudget budget = new RendezvousBudget(8 * CLASS);
        final Side side = new Side(budget, allocator, 4 * CLASS);
        final long before = System.nanoTime();
        side.inbound.onRequestToSend(1, CLASS);
        runAll(allocator);
        final long after = System.nanoTime();
        assertThat(side.inbound.overdue(before)).isNull();
        assertThat(side.inbound.overdue(after + 999_000_000L)).as("within the timeout of 1 s").isNull();
        assertThat(side.inbound.overdue(after + 1_000_000_001L)).contains("rendezvous 1 (" + CLASS + " bytes)")
            .contains("not written within 1000 ms");
        side.inbound.release(side.inbound.take(1));
        assertThat(side.inbound.overdue(after + 5_000_000_000L)).as("written: nothing overdue").isNull();
        side.inbound.releaseAll();
        side.pool.close();
        assertThat(budget.reservedBytes()).isZero();
    }

    @Test
    void shouldRefuseTheRtsWhoseAllocationFailedAndGrantTheNextOne()
    {
        final ArrayDeque<Runnable> allocator = new ArrayDeque<>();
        final RendezvousBudget budget = new RendezvousBudget(8 * CLASS);
        final Side side = new Side(budget, allocator, 4 * CLASS);
        side.pd.failNext = new OutOfMemoryError("Direct buffer memory");
        side.inbound.onRequestToSend(1, CLASS);
        side.inbound.onRequestToSend(2, CLASS);
        allocator.pollFirst().run();
        // Once, this RTS waited until its own connection released a buffer, which it had none of: a hang.
        assertThat(side.answers).containsExactly("REFUSE 1 code " + Wire.REFUSE_NO_MEMORY + " limit " + CLASS);
        assertThat(budget.reservedBytes()).as("the failed booking returned, the next one made").isEqualTo(CLASS);
        runAll(allocator); // the next RTS's allocation, started when the failure was answered
        assertThat(side.answers).containsExactly("REFUSE 1 code " + Wire.REFUSE_NO_MEMORY + " limit " + CLASS,
            "CTS 2 " + CLASS);
        assertThat(RendezvousSender.refusalReason(Wire.REFUSE_NO_MEMORY, CLASS)).contains("out of memory");
        side.inbound.releaseAll();
        side.pool.close();
        assertThat(budget.reservedBytes()).isZero();
    }

    @Test
    void shouldWakeAConnectionWaitingForTheBudgetWhenAnotherConnectionReleases()
    {
        final ArrayDeque<Runnable> allocator = new ArrayDeque<>();
        final RendezvousBudget budget = new RendezvousBudget(CLASS);
        final Side a = new Side(budget, allocator, 4 * CLASS);
        final Side b = new Side(budget, allocator, 4 * CLASS);
        a.inbound.onRequestToSend(1, CLASS);
        runAll(allocator);
        assertThat(a.answers).containsExactly("CTS 1 " + CLASS);
        b.inbound.onRequestToSend(7, CLASS);
        assertThat(b.answers).isEmpty();
        assertThat(allocator).as("nothing booked beyond the budget").isEmpty();
        assertThat(budget.waiting()).isEqualTo(1);
        final int wakeUpsOfA = a.wakeUps.get();
        // A's data arrives and its buffer comes back: freed (someone waits), and B (not A) is woken.
        a.inbound.release(a.inbound.take(1));
        assertThat(b.wakeUps.get()).isEqualTo(1);
        assertThat(a.wakeUps.get()).isEqualTo(wakeUpsOfA);
        assertThat(a.pool.bytesAllocated()).as("trimmed rather than kept").isZero();
        runAll(allocator);
        assertThat(b.answers).containsExactly("CTS 7 " + CLASS);
        assertThat(budget.peakBytes()).isEqualTo(CLASS);
        b.inbound.releaseAll();
        a.pool.close();
        b.pool.close();
        assertThat(budget.reservedBytes()).isZero();
    }

    @Test
    void shouldTrimIdleBuffersOfQuietConnectionsForOneThatNeedsTheBudget()
    {
        final ArrayDeque<Runnable> allocator = new ArrayDeque<>();
        final RendezvousBudget budget = new RendezvousBudget(2 * CLASS);
        final Side quiet = new Side(budget, allocator, 4 * CLASS);
        final Side busy = new Side(budget, allocator, 4 * CLASS);
        quiet.inbound.onRequestToSend(1, 2 * CLASS);
        runAll(allocator);
        quiet.inbound.release(quiet.inbound.take(1));
        assertThat(quiet.pool.bytesAllocated()).as("kept idle for reuse").isEqualTo(2 * CLASS);
        busy.inbound.onRequestToSend(1, CLASS);
        assertThat(quiet.pool.bytesAllocated()).as("trimmed for the busy connection").isZero();
        runAll(allocator);
        assertThat(busy.answers).containsExactly("CTS 1 " + CLASS);
        busy.inbound.releaseAll();
        quiet.pool.close();
        busy.pool.close();
        assertThat(budget.reservedBytes()).isZero();
        assertThat(quiet.pd.live + busy.pd.live).isZero();
    }

    @Test
    void shouldRefuseWhatCanNeverFitBeforeReservingAndBoundTheQueue()
    {
        final ArrayDeque<Runnable> allocator = new ArrayDeque<>();
        final RendezvousBudget budget = new RendezvousBudget(2 * CLASS);
        final Side side = new Side(budget, allocator, 4 * CLASS);
        side.inbound.onRequestToSend(1, 4 * CLASS + 1); // over the inbound limit
        side.inbound.onRequestToSend(2, 4 * CLASS);     // within it, but its class is over the budget
        assertThat(side.answers).containsExactly(
            "REFUSE 1 code " + Wire.REFUSE_TOO_LARGE + " limit " + 4 * CLASS,
            "REFUSE 2 code " + Wire.REFUSE_OVER_BUDGET + " limit " + 2 * CLASS);
        assertThat(budget.peakBytes()).isZero();
        assertThat(side.pd.allocations).isZero();
        assertThat(side.inbound.onRequestToSend(3, 0)).contains("RTS announcing 0 bytes");
        // A sender never has more than MAX_PIPELINED_RENDEZVOUS outstanding: the ninth is a protocol error.
        for (int i = 0; i < EngineConnection.MAX_PIPELINED_RENDEZVOUS; i++)
        {
            assertThat(side.inbound.onRequestToSend(10 + i, 2 * CLASS)).isNull();
        }
        assertThat(side.inbound.onRequestToSend(99, CLASS)).contains("more than 8 rendezvous");
        assertThat(side.inbound.granted() + side.inbound.queued()).isEqualTo(EngineConnection.MAX_PIPELINED_RENDEZVOUS);
        side.inbound.releaseAll();
        runAll(allocator);
        side.pool.close();
        assertThat(budget.reservedBytes()).isZero();
        assertThat(side.pd.live).isZero();
    }
}
