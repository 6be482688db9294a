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
 *
 * <p>In main code (not test scope) because the tools that run the suites on a real device ({@code reverb-rdma-check},
 * its ping-pong and its reverb-bench step) scale their own limits and round counts by the same knobs, read the same
 * way: one parser for all of them.
 */
public final class TestScale
{
    /** System property: factor for time limits, at least 1. */
    public static final String TIME_PROP = "reverb.test.timeScale";
    /** System property: factor for round counts, in (0, 1]. */
    public static final String ROUNDS_PROP = "reverb.test.roundScale";
    /** Environment variable read when {@value #TIME_PROP} is not set. */
    public static final String TIME_ENV = "REVERB_TEST_TIME_SCALE";
    /** Environment variable read when {@value #ROUNDS_PROP} is not set. */
    public static final String ROUNDS_ENV = "REVERB_TEST_ROUND_SCALE";

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

    /**
     * @param properties  system properties by name (e.g. {@code System::getProperty}).
     * @param environment environment variables by name.
     * @return the time factor those set (1 unless set).
     * @throws IllegalArgumentException if set to something not a number of at least 1.
     */
    public static double time(final Function<String, String> properties, final Function<String, String> environment)
    {
        return parse(TIME_PROP, TIME_ENV, properties, environment, 1, Double.MAX_VALUE);
    }

    /**
     * @param properties  system properties by name.
     * @param environment environment variables by name.
     * @return the round-count factor those set (1 unless set).
     * @throws IllegalArgumentException if set to something not a number in (0, 1].
     */
    public static double rounds(final Function<String, String> properties, final Function<String, String> environment)
    {
        return parse(ROUNDS_PROP, ROUNDS_ENV, properties, environment, Double.MIN_VALUE, 1);
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
