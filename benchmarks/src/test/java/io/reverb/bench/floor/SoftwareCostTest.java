package io.reverb.bench.floor;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * {@code reverb-bench software} runs each of its three echoes and reports a figure for each: every echo made round
 * trips in every sample (a stopped one reports NaN and fails the run). Counted, not timed: the figures are not checked.
 */
class SoftwareCostTest
{
    private static final Pattern ROW = Pattern.compile("^\\s+1\\s+(floor|shm://|floor\\+aeron)\\s+([0-9.]+|NaN)\\s",
        Pattern.MULTILINE);

    @Test
    void shouldMeasureEveryEcho() throws Exception
    {
        final ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        final int status = SoftwareCost.run(64, TimeUnit.MILLISECONDS.toNanos(200), TimeUnit.SECONDS.toNanos(1), 1,
            new PrintStream(bytes, true, StandardCharsets.UTF_8));
        final String out = bytes.toString(StandardCharsets.UTF_8);
        assertThat(status).as(out).isZero();
        final Matcher rows = ROW.matcher(out);
        int found = 0;
        while (rows.find())
        {
            assertThat(rows.group(2)).as(out).isNotEqualTo("NaN");
            assertThat(Double.parseDouble(rows.group(2))).as(out).isPositive();
            found++;
        }
        assertThat(found).as(out).isEqualTo(3);
    }

    @Test
    void shouldRefuseAPayloadTheEngineWouldSendByRendezvous()
    {
        final PrintStream out = new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8);
        assertThatThrownBy(() -> SoftwareCost.run(1 << 20, 0, 1, 1, out))
            .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("eager limit");
        assertThatThrownBy(() -> SoftwareCost.run(0, 0, 1, 1, out)).isInstanceOf(IllegalArgumentException.class);
    }
}
