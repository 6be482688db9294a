package io.reverb.rdma.provider.disni;

import com.ibm.disni.verbs.IbvCQ;
import com.ibm.disni.verbs.IbvCompChannel;
import com.ibm.disni.verbs.IbvWC;
import com.ibm.disni.verbs.SVCPollCq;
import com.ibm.disni.verbs.SVCReqNotify;
import io.reverb.rdma.verbs.VerbsConfig;
import java.io.IOException;
import java.lang.reflect.Field;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * DiSNi's CQ and completion channel without libdisni, for tests of {@link DisniCompletionQueue}: DiSNi's own
 * classes, allocated without their constructors (which load libdisni), with the native calls overridden. What the
 * "native" side does is scripted: poll results or errors, arm errors, and a {@code getCqEvent} that blocks until
 * the test releases it (as the native poll blocks for its timeout).
 */
final class FakeDisniCq
{
    /** Thrown by the next poll, if set. */
    volatile IOException pollError;
    /** Thrown by the next arm, if set. */
    volatile IOException notifyError;
    final AtomicInteger polls = new AtomicInteger();
    final AtomicInteger arms = new AtomicInteger();
    /** Thread names that destroyed the CQ / the channel. */
    final List<String> destroyedCqOn = new CopyOnWriteArrayList<>();
    final List<String> destroyedChannelOn = new CopyOnWriteArrayList<>();
    /** Counted down when a getCqEvent call starts. */
    final CountDownLatch inGetCqEvent = new CountDownLatch(1);
    /** getCqEvent returns (no event) only once this is open. */
    final CountDownLatch releaseGetCqEvent = new CountDownLatch(1);
    final AtomicInteger getCqEventCalls = new AtomicInteger();

    final IbvCQ cq;
    final IbvCompChannel channel;

    FakeDisniCq() throws Exception
    {
        final FakeCq fakeCq = (FakeCq)unsafe().allocateInstance(FakeCq.class);
        fakeCq.owner = this;
        final FakeChannel fakeChannel = (FakeChannel)unsafe().allocateInstance(FakeChannel.class);
        fakeChannel.owner = this;
        this.cq = fakeCq;
        this.channel = fakeChannel;
    }

    /** A context that is never opened on a device: enough for a CQ's name and tracking. */
    static DisniVerbsContext context(final String name)
    {
        final CmEventDispatcher dispatcher = new CmEventDispatcher(null, null, false, name + "-cm");
        return new DisniVerbsContext(null, VerbsConfig.defaults(), null, dispatcher, name);
    }

    DisniCompletionQueue newCq(final DisniVerbsContext context, final DisniCompletionChannel spiChannel,
        final List<String> log) throws IOException
    {
        return new DisniCompletionQueue(context, 16, spiChannel, channel, cq, log::add);
    }

    /** ibv_cq. */
    static final class FakeCq extends IbvCQ
    {
        FakeDisniCq owner;

        FakeCq() throws IOException
        {
            super(null, null, 0);
            throw new AssertionError("allocated without a constructor");
        }

        @Override
        public SVCPollCq poll(final IbvWC[] wcs, final int entries)
        {
            final FakeDisniCq o = owner;
            return new SVCPollCq()
            {
                @Override
                public int getPolls()
                {
                    return 0;
                }

                @Override
                public SVCPollCq execute() throws IOException
                {
                    o.polls.incrementAndGet();
                    final IOException error = o.pollError;
                    if (error != null)
                    {
                        throw error;
                    }
                    return this;
                }

                @Override
                public boolean isValid()
                {
                    return true;
                }

                @Override
                public SVCPollCq free()
                {
                    return this;
                }
            };
        }

        @Override
        public SVCReqNotify reqNotification(final boolean solicitedOnly)
        {
            final FakeDisniCq o = owner;
            return new SVCReqNotify()
            {
                @Override
                public SVCReqNotify execute() throws IOException
                {
                    o.arms.incrementAndGet();
                    final IOException error = o.notifyError;
                    if (error != null)
                    {
                        throw error;
                    }
                    return this;
                }

                @Override
                public boolean isValid()
                {
                    return true;
                }

                @Override
                public SVCReqNotify free()
                {
                    return this;
                }
            };
        }

        @Override
        public int ackEvents(final int events)
        {
            return 0;
        }

        @Override
        public int destroyCQ()
        {
            owner.destroyedCqOn.add(Thread.currentThread().getName());
            return 0;
        }
    }

    /** ibv_comp_channel. */
    static final class FakeChannel extends IbvCompChannel
    {
        FakeDisniCq owner;

        FakeChannel() throws IOException
        {
            super(0, null);
            throw new AssertionError("allocated without a constructor");
        }

        @Override
        public boolean getCqEvent(final IbvCQ cq, final int timeoutMs) throws IOException
        {
            owner.getCqEventCalls.incrementAndGet();
            owner.inGetCqEvent.countDown();
            try
            {
                // As the native poll: no event, returning only when "its timeout" passed (the test says when).
                owner.releaseGetCqEvent.await(60, TimeUnit.SECONDS);
            }
            catch (final InterruptedException ex)
            {
                Thread.currentThread().interrupt();
            }
            return false;
        }

        @Override
        public int destroyCompChannel()
        {
            owner.destroyedChannelOn.add(Thread.currentThread().getName());
            return 0;
        }
    }

    // CHECKSTYLE.OFF: InlineFullyQualifiedName - sun.misc may not be imported (IllegalImport)
    private static sun.misc.Unsafe unsafe() throws Exception
    {
        final Field field = sun.misc.Unsafe.class.getDeclaredField("theUnsafe");
        field.setAccessible(true);
        return (sun.misc.Unsafe)field.get(null);
    }
    // CHECKSTYLE.ON: InlineFullyQualifiedName
}
