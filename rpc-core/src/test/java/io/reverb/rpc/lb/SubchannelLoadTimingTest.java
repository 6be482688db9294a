package io.reverb.rpc.lb;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * A subchannel's calls are counted always and timed only once a picker reads the latency: a channel whose picker never
 * does (pick_first, round_robin: every single-address channel) reads no clock and keeps no average per call. Counted
 * clock reads, no timing.
 */
class SubchannelLoadTimingTest
{
    private final AtomicInteger clockReads = new AtomicInteger();
    private final long[] now = {1_000_000_000L};
    private final SubchannelLoad load = new SubchannelLoad(() ->
    {
        clockReads.incrementAndGet();
        return now[0];
    }, 50_000_000L);

    @Test
    void shouldCountButNotTimeCallsUntilAPickerReadsTheLatency()
    {
        final int atConstruction = clockReads.get();
        for (int i = 0; i < 100; i++)
        {
            final long start = load.startCall();
            assertThat(start).isEqualTo(SubchannelLoad.UNTIMED);
            assertThat(load.outstanding()).isOne();
            now[0] += 5_000;
            load.endCall(start);
        }
        assertThat(clockReads.get()).as("no clock read for 100 untimed calls").isEqualTo(atConstruction);
        assertThat(load.outstanding()).isZero();
        assertThat(load.latencyNanos(now[0])).as("no average was kept").isZero();
    }

    @Test
    void shouldTimeEveryCallStartedAfterAPickerReadTheCost()
    {
        final long before = load.startCall(); // started before any pick read the latency: counted only
        assertThat(load.cost(now[0])).isEqualTo(SubchannelLoad.UNKNOWN_BUSY_COST + 1);
        final long timed = load.startCall();
        assertThat(timed).isEqualTo(now[0]);
        now[0] += 7_000;
        load.endCall(timed);
        assertThat(load.latencyNanos(now[0])).as("the timed call's latency is the first sample").isEqualTo(7_000.0);
        now[0] += 1_000;
        load.endCall(before);
        assertThat(load.latencyNanos(now[0])).as("the untimed call left the average alone")
            .isCloseTo(7_000.0, within(1.0));
        assertThat(load.outstanding()).isZero();
    }
}
