package io.reverb.rdma.verbs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.Map;
import org.junit.jupiter.api.Test;

/** The slow-host knobs of the rdma:// suites: property before environment, defaults 1, bad values refused. */
class TestScaleTest
{
    @Test
    void shouldDefaultToOne()
    {
        assertThat(TestScale.time(k -> null, k -> null)).isEqualTo(1.0);
        assertThat(TestScale.rounds(k -> null, k -> null)).isEqualTo(1.0);
    }

    @Test
    void shouldReadThePropertyBeforeTheEnvironment()
    {
        final Map<String, String> env = Map.of("REVERB_TEST_TIME_SCALE", "10", "REVERB_TEST_ROUND_SCALE", "0.05");
        assertThat(TestScale.time(k -> null, env::get)).isEqualTo(10.0);
        assertThat(TestScale.rounds(k -> null, env::get)).isEqualTo(0.05);
        final Map<String, String> props = Map.of(TestScale.TIME_PROP, "4", TestScale.ROUNDS_PROP, "0.5");
        assertThat(TestScale.time(props::get, env::get)).isEqualTo(4.0);
        assertThat(TestScale.rounds(props::get, env::get)).isEqualTo(0.5);
    }

    @Test
    void shouldRefuseValuesOutOfRangeNamingTheKnob()
    {
        assertThatThrownBy(() -> TestScale.time(Map.of(TestScale.TIME_PROP, "0.5")::get, k -> null))
            .hasMessageContaining(TestScale.TIME_PROP).hasMessageContaining("out of range");
        assertThatThrownBy(() -> TestScale.rounds(k -> null, Map.of("REVERB_TEST_ROUND_SCALE", "2")::get))
            .hasMessageContaining("REVERB_TEST_ROUND_SCALE").hasMessageContaining("out of range");
        assertThatThrownBy(() -> TestScale.rounds(k -> null, Map.of("REVERB_TEST_ROUND_SCALE", "x")::get))
            .hasMessageContaining("not a number");
    }
}
