package io.reverb.bench.report;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.reverb.bench.floor.FloorTargets;
import io.reverb.bench.load.RunResult;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * One Reverb run set against a floor run of the same report ({@code floor://}, {@code floor+aeron://}: two processes,
 * shared memory, no RPC) of the same shape and polling mode: how many times the floor's latency the RPC takes.
 *
 * @param run   the Reverb run.
 * @param floor the floor run it is compared with.
 */
public record FloorComparison(RunResult run, RunResult floor)
{
    /**
     * @return the run's median latency as a multiple of the floor's (1 is the floor; lower is better).
     */
    public double p50Times()
    {
        return run.percentileMicros(50) / floor.percentileMicros(50);
    }

    /**
     * @return the run's p99.9 latency as a multiple of the floor's.
     */
    public double p999Times()
    {
        return run.percentileMicros(99.9) / floor.percentileMicros(99.9);
    }

    /**
     * Each Reverb run is compared with every floor run of the same shape (kind, payload, concurrency, rate), the
     * same polling mode (an empty mode, the transport's default, matches only an empty mode) and the same round.
     *
     * @param runs runs of one report.
     * @return comparisons, empty when the report has no floor run.
     */
    public static List<FloorComparison> of(final List<RunResult> runs)
    {
        final List<FloorComparison> comparisons = new ArrayList<>();
        for (final RunResult r : runs)
        {
            if (!"reverb".equals(r.framework) || r.latency.getTotalCount() == 0)
            {
                continue;
            }
            for (final RunResult f : runs)
            {
                if (FloorTargets.FRAMEWORK.equals(f.framework) && f.latency.getTotalCount() > 0 && sameShape(r, f))
                {
                    comparisons.add(new FloorComparison(r, f));
                }
            }
        }
        return comparisons;
    }

    static boolean sameShape(final RunResult a, final RunResult b)
    {
        return a.kind.equals(b.kind) && a.payloadSize == b.payloadSize && a.streamMessages == b.streamMessages &&
            a.concurrency == b.concurrency && a.rps == b.rps && a.polling.equals(b.polling) && a.round == b.round;
    }

    /**
     * Appends the text report's section, if there are comparisons.
     *
     * @param out  the report.
     * @param runs its runs.
     */
    static void appendText(final StringBuilder out, final List<RunResult> runs)
    {
        final List<FloorComparison> comparisons = of(runs);
        if (comparisons.isEmpty())
        {
            return;
        }
        out.append("\nAgainst the floor (Reverb / floor latency, same payload and polling mode: 1.0x is the floor):\n");
        for (final FloorComparison c : comparisons)
        {
            out.append(String.format(Locale.ROOT, "  %-28s vs %-26s p50 %6.2fx the floor   p99.9 %6.2fx the floor%n",
                c.run().label, c.floor().label, c.p50Times(), c.p999Times()));
        }
    }

    /**
     * Writes the comparisons into a JSON array.
     *
     * @param array the report's {@code floorComparisons} array.
     * @param runs  its runs.
     */
    static void writeJson(final ArrayNode array, final List<RunResult> runs)
    {
        for (final FloorComparison c : of(runs))
        {
            final ObjectNode node = array.addObject();
            node.put("run", c.run().label);
            node.put("floor", c.floor().label);
            node.put("polling", c.run().polling);
            node.put("payloadSize", c.run().payloadSize);
            node.put("p50Times", finite(c.p50Times()));
            node.put("p99_9Times", finite(c.p999Times()));
        }
    }

    /**
     * @param value a ratio.
     * @return it, or 0 if it is not finite (a run without calls): JSON has no NaN.
     */
    static double finite(final double value)
    {
        return Double.isFinite(value) ? value : 0;
    }

    /**
     * Appends the HTML report's section, if there are comparisons.
     *
     * @param out  the report.
     * @param runs its runs.
     */
    static void appendHtml(final StringBuilder out, final List<RunResult> runs)
    {
        final List<FloorComparison> comparisons = of(runs);
        if (comparisons.isEmpty())
        {
            return;
        }
        out.append("<h2>Reverb against the floor (shared memory, no RPC)</h2>\n<table>\n<tr><th class=\"l\">run</th>")
            .append("<th class=\"l\">floor</th><th>p50, times the floor</th><th>p99.9, times the floor</th></tr>\n");
        for (final FloorComparison c : comparisons)
        {
            out.append("<tr><td class=\"l\">").append(HtmlReport.escape(c.run().label)).append("</td><td class=\"l\">")
                .append(HtmlReport.escape(c.floor().label)).append("</td><td>")
                .append(String.format(Locale.ROOT, "%.2fx", c.p50Times())).append("</td><td>")
                .append(String.format(Locale.ROOT, "%.2fx", c.p999Times())).append("</td></tr>\n");
        }
        out.append("</table>\n");
    }
}
