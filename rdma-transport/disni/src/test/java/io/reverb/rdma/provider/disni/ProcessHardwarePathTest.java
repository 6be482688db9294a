package io.reverb.rdma.provider.disni;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

/** The round-count scale of reverb-rdma-check's ping-pong on a slow host (REVERB_TEST_ROUND_SCALE). */
class ProcessHardwarePathTest
{
    @Test
    void shouldRunTheFullRoundsUnlessAScaleIsSet()
    {
        assertThat(ProcessHardwarePath.roundScale(null, null)).isEqualTo(1.0);
        assertThat(ProcessHardwarePath.roundScale(" ", "")).isEqualTo(1.0);
        assertThat(ProcessHardwarePath.scaled(ProcessHardwarePath.PING_PONG_MESSAGES, 1.0)).isEqualTo(100_000);
    }

    @Test
    void shouldPreferThePropertyToTheEnvironment()
    {
        assertThat(ProcessHardwarePath.roundScale("0.5", "0.01")).isEqualTo(0.5);
        assertThat(ProcessHardwarePath.roundScale(null, "0.01")).isEqualTo(0.01);
    }

    @Test
    void shouldScaleRoundsDownToAtLeastOne()
    {
        assertThat(ProcessHardwarePath.scaled(ProcessHardwarePath.PING_PONG_MESSAGES, 0.01)).isEqualTo(1_000);
        assertThat(ProcessHardwarePath.scaled(ProcessHardwarePath.PING_PONG_WARMUP, 0.01)).isEqualTo(200);
        assertThat(ProcessHardwarePath.scaled(3, 0.01)).isEqualTo(1);
    }

    @Test
    void shouldRefuseAScaleThatIsNotAFractionWithTheKnobsName()
    {
        for (final String bad : new String[] {"0", "-1", "2", "NaN", "lots"})
        {
            assertThatThrownBy(() -> ProcessHardwarePath.roundScale(bad, null))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining(ProcessHardwarePath.ROUND_SCALE_ENV).hasMessageContaining(bad);
        }
    }
}
