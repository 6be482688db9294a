package io.reverb.common;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class LogLimiterTest
{
    private long now = 7;
    private final LogLimiter limiter = new LogLimiter(() -> now);

    @Test
    void shouldPassABurstThenOneLinePerIntervalCountingTheLeftOut()
    {
        int passed = 0;
        for (int i = 0; i < 1_000; i++)
        {
            if (limiter.admit("m") != LogLimiter.SUPPRESS)
            {
                passed++;
            }
        }
        assertThat(passed).isEqualTo(LogLimiter.BURST);
        assertThat(limiter.admit("other")).as("keys are limited apart").isZero();
        now += LogLimiter.INTERVAL_NANOS - 1;
        assertThat(limiter.admit("m")).as("one nanosecond before the interval ends").isEqualTo(LogLimiter.SUPPRESS);
        now += 1;
        assertThat(limiter.admit("m")).isEqualTo(1_000 - LogLimiter.BURST + 1);
        assertThat(limiter.admit("m")).isEqualTo(LogLimiter.SUPPRESS);
        now += LogLimiter.INTERVAL_NANOS;
        assertThat(limiter.admit("m")).as("the count starts again after each line that passes").isEqualTo(1);
    }

    @Test
    void shouldShareOneBudgetAmongKeysBeyondTheLimitSoThatThePeerCannotGrowTheTable()
    {
        for (int i = 0; i < LogLimiter.MAX_KEYS; i++)
        {
            assertThat(limiter.admit("key" + i)).isZero();
        }
        int passed = 0;
        for (int i = 0; i < 1_000; i++)
        {
            if (limiter.admit("new" + i) != LogLimiter.SUPPRESS)
            {
                passed++;
            }
        }
        assertThat(passed).as("keys beyond the table share the overflow key's burst").isEqualTo(LogLimiter.BURST);
        assertThat(limiter.admit("key0")).as("keys already tracked keep their own budget").isZero();
    }

    @Test
    void shouldSayHowManyWereLeftOutOnlyWhenSomeWere()
    {
        assertThat(LogLimiter.leftOutSuffix(0)).isEmpty();
        assertThat(LogLimiter.leftOutSuffix(3)).isEqualTo(" (3 more like this in the last 10 s were not logged)");
    }

    @Test
    void shouldLogABurstThenOneLinePerIntervalWithTheCountLeftOutAndCountEveryLine()
    {
        final List<String> lines = new ArrayList<>();
        final List<Throwable> stacks = new ArrayList<>();
        final LogLimiter log = new LogLimiter((line, stack) ->
        {
            lines.add(line);
            stacks.add(stack);
        }, () -> now);
        for (int i = 0; i < 2_000; i++)
        {
            assertThat(log.log("malformed", "refused 10.0.0." + (i % 250) + ": bad magic", null))
                .isEqualTo(i < LogLimiter.BURST);
        }
        assertThat(log.offered()).isEqualTo(2_000);
        assertThat(lines).hasSize(LogLimiter.BURST);
        assertThat(lines.get(0)).isEqualTo("refused 10.0.0.0: bad magic");
        assertThat(stacks).containsOnlyNulls();

        now += LogLimiter.INTERVAL_NANOS;
        final IllegalStateException bug = new IllegalStateException("a bug");
        assertThat(log.log("malformed", "again", bug)).isTrue();
        assertThat(lines).hasSize(LogLimiter.BURST + 1);
        assertThat(lines.get(LogLimiter.BURST)).isEqualTo("again (" + (2_000 - LogLimiter.BURST) +
            " more like this in the last 10 s were not logged)");
        assertThat(stacks.get(LogLimiter.BURST)).isSameAs(bug);

        // another key has its own budget
        assertThat(log.log("deadline", "no handshake within 2000 ms", null)).isTrue();
        assertThat(log.offered()).isEqualTo(2_002);
    }

    @Test
    void shouldRefuseToLogWithoutASink()
    {
        assertThatThrownBy(() -> limiter.log("m", "line", null)).isInstanceOf(IllegalStateException.class)
            .hasMessageContaining("no sink");
        assertThat(limiter.admit("m")).as("admit works without one").isZero();
    }
}
