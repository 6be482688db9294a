package io.reverb.rpc.lb;

import static org.assertj.core.api.Assertions.assertThat;

import com.sun.management.ThreadMXBean;
import java.lang.management.ManagementFactory;
import java.net.URI;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * Picking is on every call's path: none of the built-in pickers may allocate per pick.
 */
class PickerAllocationTest
{
    private static final int PICKS = 200_000;

    @Test
    void shouldNotAllocatePerPick()
    {
        final Object bean = ManagementFactory.getThreadMXBean();
        Assumptions.assumeTrue(bean instanceof ThreadMXBean,
            "this JVM does not count allocated bytes per thread (com.sun.management.ThreadMXBean)");
        final ThreadMXBean threads = (ThreadMXBean)bean;

        final FakeHelper helper = new FakeHelper();
        final Subchannel[] ready = new Subchannel[3];
        for (int i = 0; i < ready.length; i++)
        {
            ready[i] = helper.createSubchannel(URI.create("tcp://h" + i + ":1"), (s, st) -> { });
            ready[i].load().callStarted();
            ready[i].load().callFinished(1000 * (i + 1));
        }
        final Picker[] pickers = {Pickers.roundRobin(ready, 0), Pickers.peakEwma(ready), Pickers.fixed(ready[0])};
        for (final Picker picker : pickers)
        {
            pickMany(picker); // warm up
            final long tid = Thread.currentThread().getId();
            final long before = threads.getThreadAllocatedBytes(tid);
            final long sink = pickMany(picker);
            final long allocated = threads.getThreadAllocatedBytes(tid) - before;
            assertThat(sink).isPositive();
            // a per-pick allocation would be >= 16 bytes x 200,000; allow the measurement's own few bytes
            assertThat(allocated).as("%s allocated %d bytes for %d picks", picker, allocated, PICKS).isLessThan(4096);
        }
    }

    private static long pickMany(final Picker picker)
    {
        long sink = 0;
        for (int i = 0; i < PICKS; i++)
        {
            sink += picker.pick().address().getPort();
        }
        return sink;
    }
}
