package io.reverb.rdma.provider.disni;

import static org.assertj.core.api.Assertions.assertThat;

import io.reverb.rdma.verbs.TestScale;
import org.junit.jupiter.api.Test;

/**
 * The round-count scale of reverb-rdma-check's ping-pong on a slow host (REVERB_TEST_ROUND_SCALE): the knobs are
 * {@link TestScale}'s (its own test covers parsing and refusals), the rounds scale down to at least one.
 */
class ProcessHardwarePathTest
{
    @Test
    void shouldReadTheSuitesKnobsAndPassThemToItsChildren()
    {
        assertThat(ProcessHardwarePath.ROUND_SCALE_PROP).isEqualTo(TestScale.ROUNDS_PROP).isEqualTo("reverb.test.roundScale");
        assertThat(ProcessHardwarePath.ROUND_SCALE_ENV).isEqualTo(TestScale.ROUNDS_ENV).isEqualTo("REVERB_TEST_ROUND_SCALE");
        assertThat(ProcessHardwarePath.TIME_SCALE_PROP).isEqualTo(TestScale.TIME_PROP).isEqualTo("reverb.test.timeScale");
    }

    @Test
    void shouldRunTheFullRoundsAtScaleOne()
    {
        assertThat(ProcessHardwarePath.scaled(ProcessHardwarePath.PING_PONG_MESSAGES, 1.0)).isEqualTo(100_000);
    }

    @Test
    void shouldScaleRoundsDownToAtLeastOne()
    {
        assertThat(ProcessHardwarePath.scaled(ProcessHardwarePath.PING_PONG_MESSAGES, 0.01)).isEqualTo(1_000);
        assertThat(ProcessHardwarePath.scaled(ProcessHardwarePath.PING_PONG_WARMUP, 0.01)).isEqualTo(200);
        assertThat(ProcessHardwarePath.scaled(3, 0.01)).isEqualTo(1);
    }
}
