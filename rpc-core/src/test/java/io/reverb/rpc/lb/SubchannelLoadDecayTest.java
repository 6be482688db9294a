package io.reverb.rpc.lb;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import org.junit.jupiter.api.Test;

/**
 * The decayed latency average is {@code ewma · exp(-elapsed / decay)} at every gap since the last answer, whichever
 * way it is computed (a short gap takes the series, a long one {@link Math#exp}).
 */
class SubchannelLoadDecayTest
{
    private static final long DECAY = 50_000_000L;

    @Test
    void shouldDecayTheAverageAsTheExponentialAtShortAndLongGaps()
    {
        final long[] clock = {1_000_000_000L};
        final SubchannelLoad load = new SubchannelLoad(() -> clock[0], DECAY);
        load.callStarted();
        load.callFinished(20_000); // the first answer is the average
        final long answered = clock[0];
        assertThat(load.latencyNanos(answered)).isEqualTo(20_000.0);
        final long boundary = (long)(SubchannelLoad.SHORT_GAP * DECAY);
        final long[] gaps = {1, 7, 1_000, 12_345, boundary - 1, boundary, boundary + 1, 3 * boundary, DECAY, 9 * DECAY};
        for (final long gap : gaps)
        {
            final double expected = 20_000.0 * Math.exp(-(double)gap / DECAY);
            assertThat(load.latencyNanos(answered + gap)).as("decayed after %d ns", gap)
                .isCloseTo(expected, within(expected * 1e-9));
        }
    }

    @Test
    void shouldTakeTheDecayedAverageAsTheBaseOfTheNextAnswer()
    {
        final long[] clock = {5_000_000_000L};
        final SubchannelLoad load = new SubchannelLoad(() -> clock[0], DECAY);
        load.callStarted();
        load.callFinished(10_000);
        // 2 µs later a faster answer: the base is the average decayed over 2 µs (a short gap), then a tenth of the way
        clock[0] += 2_000;
        load.callStarted();
        load.callFinished(5_000);
        final double base = 10_000.0 * Math.exp(-2_000.0 / DECAY);
        final double expected = base + SubchannelLoad.DOWN_WEIGHT * (5_000 - base);
        assertThat(load.latencyNanos(clock[0])).isCloseTo(expected, within(expected * 1e-9));
        assertThat(load.outstanding()).isZero();
    }
}
