package io.reverb.rdma.verbs;

import java.util.Locale;
import java.util.function.Function;

/**
 * How much slower than a build machine the host running the {@code rdma://} suites is, for the suites that run on a
 * real device too (a VM under software emulation, {@code bin/reverb-rdma-vm}, runs the JVM about ten times slower).
 * Two knobs, each a system property or else an environment variable, default 1 (a build runs exactly as before):
 * <ul>
 *   <li>{@value #TIME_PROP} ({@code REVERB_TEST_TIME_SCALE}): multiplies the time limits of waits that must end
 *       (a limit, never an expected duration), at least 1;</li>
 *   <li>{@value #ROUNDS_PROP} ({@code REVERB_TEST_ROUND_SCALE}): multiplies the round counts of the long ping-pong
 *       tests (the same test with fewer rounds), between 0 (exclusive) and 1.</li>
 * </ul>
 * A value out of range or not a number is refused with an error that names the knob: a test run with a typo must not
 * silently run at another scale.
 */
public final class TestScale
{
    /** System property: factor for time limits (>= 1). */
    public static final String TIME_PROP = "reverb.test.timeScale";
    /** System property: factor for round counts (0 < x <= 1). */
    public static final String ROUNDS_PROP = "reverb.test.roundScale";

    private TestScale()
    {
    }

    /** @return the time factor in force (1 unless set). */
    public static double time()
    {
        return time(System::getProperty, System::getenv);
    }

    /** @return the round-count factor in force (1 unless set). */
    public static double rounds()
    {
        return rounds(System::getProperty, System::getenv);
    }

    /**
     * @param nanos a time limit on a build machine.
     * @return that limit on this host.
     */
    public static long nanos(final long nanos)
    {
        return (long)Math.min(Long.MAX_VALUE / 2.0, nanos * time());
    }

    /**
     * @param count a round count on a build machine.
     * @return that count on this host, at least 1.
     */
    public static int rounds(final int count)
    {
        return Math.max(1, (int)Math.round(count * rounds()));
    }

    /** @return one line for a test run's log, e.g. {@code "test scale: time x10, rounds x0.05"}. */
    public static String describe()
    {
        return String.format(Locale.ROOT, "test scale: time x%s (%s), rounds x%s (%s)", format(time()), TIME_PROP,
            format(rounds()), ROUNDS_PROP);
    }

    static double time(final Function<String, String> properties, final Function<String, String> environment)
    {
        return parse(TIME_PROP, "REVERB_TEST_TIME_SCALE", properties, environment, 1, Double.MAX_VALUE);
    }

    static double rounds(final Function<String, String> properties, final Function<String, String> environment)
    {
        return parse(ROUNDS_PROP, "REVERB_TEST_ROUND_SCALE", properties, environment, Double.MIN_VALUE, 1);
    }

    private static double parse(final String property, final String variable,
        final Function<String, String> properties, final Function<String, String> environment, final double min,
        final double max)
    {
        String text = properties.apply(property);
        String source = "-D" + property;
        if (text == null || text.isBlank())
        {
            text = environment.apply(variable);
            source = variable;
        }
        if (text == null || text.isBlank())
        {
            return 1;
        }
        final double value;
        try
        {
            value = Double.parseDouble(text.trim());
        }
        catch (final NumberFormatException ex)
        {
            throw new IllegalArgumentException(source + "=" + text + " is not a number", ex);
        }
        if (!(value >= min && value <= max))
        {
            throw new IllegalArgumentException(source + "=" + text + " is out of range [" + format(min) + ", " +
                format(max) + "]");
        }
        return value;
    }

    private static String format(final double value)
    {
        return value == Math.rint(value) && Math.abs(value) < 1e15 ? Long.toString((long)value) :
            value < 1e-6 ? "0" : String.format(Locale.ROOT, "%s", value);
    }
}
