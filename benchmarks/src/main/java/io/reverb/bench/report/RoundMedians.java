package io.reverb.bench.report;

import io.reverb.bench.load.RunResult;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.ToDoubleFunction;

/**
 * With {@code --rounds N} the whole target list runs N times over, round by round, so that a machine whose speed
 * drifts (a shared VM, a neighbour's load) moves every target of a round alike; each round's ratios pair runs of that
 * round only ({@link Comparison}, {@link FloorComparison}), and this section gives each pair's median over the rounds,
 * with every round's p50 ratio beside it.
 */
final class RoundMedians
{
    private RoundMedians()
    {
    }

    /**
     * @param runs runs of one report.
     * @return the highest round among them (1 without rounds).
     */
    static int rounds(final List<RunResult> runs)
    {
        int rounds = 1;
        for (final RunResult r : runs)
        {
            rounds = Math.max(rounds, r.round);
        }
        return rounds;
    }

    /**
     * Appends the medians, if the report has more than one round.
     *
     * @param out  the text report.
     * @param runs its runs.
     */
    static void appendText(final StringBuilder out, final List<RunResult> runs)
    {
        final int rounds = rounds(runs);
        if (rounds < 2)
        {
            return;
        }
        final Map<String, List<Comparison>> grpc = new LinkedHashMap<>();
        for (final Comparison c : Comparison.against(runs))
        {
            grpc.computeIfAbsent(c.run().baseLabel() + " vs " + c.baseline().baseLabel(), k -> new ArrayList<>()).add(c);
        }
        final Map<String, List<FloorComparison>> floor = new LinkedHashMap<>();
        for (final FloorComparison c : FloorComparison.of(runs))
        {
            floor.computeIfAbsent(c.run().baseLabel() + " vs " + c.floor().baseLabel(), k -> new ArrayList<>()).add(c);
        }
        if (grpc.isEmpty() && floor.isEmpty())
        {
            return;
        }
        out.append(String.format(Locale.ROOT, "%nMedians over %d rounds (targets alternated round by round; each " +
            "round's ratio pairs runs of that round):%n", rounds));
        for (final List<Comparison> pair : grpc.values())
        {
            final Comparison first = pair.get(0);
            out.append(String.format(Locale.ROOT,
                "  %-28s vs %-24s p50 %6.1fx lower   p99.9 %6.1fx lower   throughput %6.1fx   p50 by round: %s%n",
                first.run().baseLabel(), first.baseline().baseLabel(), median(pair, Comparison::p50Ratio),
                median(pair, Comparison::p999Ratio), median(pair, Comparison::throughputRatio),
                each(pair, Comparison::p50Ratio, "%.1f")));
        }
        for (final List<FloorComparison> pair : floor.values())
        {
            final FloorComparison first = pair.get(0);
            out.append(String.format(Locale.ROOT,
                "  %-28s vs %-26s p50 %6.2fx the floor   p99.9 %6.2fx the floor   p50 by round: %s%n",
                first.run().baseLabel(), first.floor().baseLabel(), median(pair, FloorComparison::p50Times),
                median(pair, FloorComparison::p999Times), each(pair, FloorComparison::p50Times, "%.2f")));
        }
    }

    /**
     * @param items  the rounds' comparisons of one pair.
     * @param metric the ratio.
     * @param <T>    the comparison type.
     * @return its median (the mean of the middle two for an even count).
     */
    static <T> double median(final List<T> items, final ToDoubleFunction<T> metric)
    {
        final double[] values = new double[items.size()];
        for (int i = 0; i < values.length; i++)
        {
            values[i] = metric.applyAsDouble(items.get(i));
        }
        Arrays.sort(values);
        final int mid = values.length / 2;
        return values.length % 2 == 1 ? values[mid] : (values[mid - 1] + values[mid]) / 2;
    }

    private static <T> String each(final List<T> items, final ToDoubleFunction<T> metric, final String format)
    {
        final StringBuilder text = new StringBuilder();
        for (final T item : items)
        {
            if (text.length() > 0)
            {
                text.append(", ");
            }
            text.append(String.format(Locale.ROOT, format, metric.applyAsDouble(item)));
        }
        return text.toString();
    }
}
