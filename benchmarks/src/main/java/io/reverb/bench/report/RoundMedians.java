package io.reverb.bench.report;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
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
 * with every round's p50 ratio beside it (text, JSON {@code roundMedians}, HTML).
 *
 * @param run        the Reverb (or other) target, its label without the round.
 * @param baseline   what it is set against: the grpc-java run's or the floor run's label, without the round.
 * @param floor      true for a floor pair (times the floor, lower is better), false for a grpc-java one (lower by).
 * @param p50        the median over the rounds of the p50 ratio.
 * @param p999       the same for p99.9.
 * @param throughput the same for throughput (grpc-java pairs; NaN for a floor pair).
 * @param p50ByRound each round's p50 ratio, in round order.
 */
record RoundMedians(String run, String baseline, boolean floor, double p50, double p999, double throughput,
    double[] p50ByRound)
{
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
     * @param runs runs of one report.
     * @return each pair's medians, grpc-java pairs first; empty for a report of one round.
     */
    static List<RoundMedians> of(final List<RunResult> runs)
    {
        final List<RoundMedians> medians = new ArrayList<>();
        if (rounds(runs) < 2)
        {
            return medians;
        }
        final Map<String, List<Comparison>> grpc = new LinkedHashMap<>();
        for (final Comparison c : Comparison.against(runs))
        {
            grpc.computeIfAbsent(c.run().baseLabel() + " vs " + c.baseline().baseLabel(), k -> new ArrayList<>()).add(c);
        }
        for (final List<Comparison> pair : grpc.values())
        {
            medians.add(new RoundMedians(pair.get(0).run().baseLabel(), pair.get(0).baseline().baseLabel(), false,
                median(pair, Comparison::p50Ratio), median(pair, Comparison::p999Ratio),
                median(pair, Comparison::throughputRatio), each(pair, Comparison::p50Ratio)));
        }
        final Map<String, List<FloorComparison>> floors = new LinkedHashMap<>();
        for (final FloorComparison c : FloorComparison.of(runs))
        {
            floors.computeIfAbsent(c.run().baseLabel() + " vs " + c.floor().baseLabel(), k -> new ArrayList<>()).add(c);
        }
        for (final List<FloorComparison> pair : floors.values())
        {
            medians.add(new RoundMedians(pair.get(0).run().baseLabel(), pair.get(0).floor().baseLabel(), true,
                median(pair, FloorComparison::p50Times), median(pair, FloorComparison::p999Times), Double.NaN,
                each(pair, FloorComparison::p50Times)));
        }
        return medians;
    }

    /**
     * Appends the medians, if the report has more than one round.
     *
     * @param out  the text report.
     * @param runs its runs.
     */
    static void appendText(final StringBuilder out, final List<RunResult> runs)
    {
        final List<RoundMedians> medians = of(runs);
        if (medians.isEmpty())
        {
            return;
        }
        out.append(String.format(Locale.ROOT, "%nMedians over %d rounds (targets alternated round by round; each " +
            "round's ratio pairs runs of that round):%n", rounds(runs)));
        for (final RoundMedians m : medians)
        {
            out.append(m.floor ?
                String.format(Locale.ROOT,
                    "  %-28s vs %-26s p50 %6.2fx the floor   p99.9 %6.2fx the floor   p50 by round: %s%n",
                    m.run, m.baseline, m.p50, m.p999, m.byRound("%.2f")) :
                String.format(Locale.ROOT,
                    "  %-28s vs %-24s p50 %6.1fx lower   p99.9 %6.1fx lower   throughput %6.1fx   p50 by round: %s%n",
                    m.run, m.baseline, m.p50, m.p999, m.throughput, m.byRound("%.1f")));
        }
    }

    /**
     * Writes the medians into a JSON array (empty for a report of one round).
     *
     * @param array the report's {@code roundMedians} array.
     * @param runs  its runs.
     */
    static void writeJson(final ArrayNode array, final List<RunResult> runs)
    {
        for (final RoundMedians m : of(runs))
        {
            final ObjectNode node = array.addObject();
            node.put("run", m.run);
            node.put(m.floor ? "floor" : "baseline", m.baseline);
            node.put("p50", FloorComparison.finite(m.p50));
            node.put("p99_9", FloorComparison.finite(m.p999));
            if (!m.floor)
            {
                node.put("throughput", FloorComparison.finite(m.throughput));
            }
            final ArrayNode byRound = node.putArray("p50ByRound");
            for (final double v : m.p50ByRound)
            {
                byRound.add(FloorComparison.finite(v));
            }
        }
    }

    /**
     * Appends the HTML report's section, if the report has more than one round.
     *
     * @param out  the report.
     * @param runs its runs.
     */
    static void appendHtml(final StringBuilder out, final List<RunResult> runs)
    {
        final List<RoundMedians> medians = of(runs);
        if (medians.isEmpty())
        {
            return;
        }
        out.append("<h2>Medians over ").append(rounds(runs)).append(" rounds</h2>\n<table>\n<tr><th class=\"l\">run</th>")
            .append("<th class=\"l\">against</th><th>p50</th><th>p99.9</th><th>throughput</th>")
            .append("<th class=\"l\">p50 by round</th></tr>\n");
        for (final RoundMedians m : medians)
        {
            final String unit = m.floor ? "x the floor" : "x lower";
            final String format = m.floor ? "%.2f" : "%.1f";
            out.append("<tr><td class=\"l\">").append(HtmlReport.escape(m.run)).append("</td><td class=\"l\">")
                .append(HtmlReport.escape(m.baseline)).append("</td><td>")
                .append(String.format(Locale.ROOT, format, m.p50)).append(unit).append("</td><td>")
                .append(String.format(Locale.ROOT, format, m.p999)).append(unit).append("</td><td>")
                .append(m.floor ? "" : String.format(Locale.ROOT, "%.1fx", m.throughput)).append("</td><td class=\"l\">")
                .append(m.byRound(format)).append("</td></tr>\n");
        }
        out.append("</table>\n");
    }

    /**
     * @param items  the rounds' comparisons of one pair.
     * @param metric the ratio.
     * @param <T>    the comparison type.
     * @return its median (the mean of the middle two for an even count).
     */
    static <T> double median(final List<T> items, final ToDoubleFunction<T> metric)
    {
        final double[] values = each(items, metric);
        Arrays.sort(values);
        final int mid = values.length / 2;
        return values.length % 2 == 1 ? values[mid] : (values[mid - 1] + values[mid]) / 2;
    }

    private static <T> double[] each(final List<T> items, final ToDoubleFunction<T> metric)
    {
        final double[] values = new double[items.size()];
        for (int i = 0; i < values.length; i++)
        {
            values[i] = metric.applyAsDouble(items.get(i));
        }
        return values;
    }

    private String byRound(final String format)
    {
        final StringBuilder text = new StringBuilder();
        for (final double v : p50ByRound)
        {
            if (text.length() > 0)
            {
                text.append(", ");
            }
            text.append(String.format(Locale.ROOT, format, v));
        }
        return text.toString();
    }
}
