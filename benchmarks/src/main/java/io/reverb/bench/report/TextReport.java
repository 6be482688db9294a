package io.reverb.bench.report;

import io.reverb.bench.load.Formats;
import io.reverb.bench.load.RunResult;
import org.HdrHistogram.Histogram;

import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Human-readable results, laid out like ghz's summary: totals, latency distribution, a
 * histogram with log-spaced buckets (latency tails span decades), the status codes, and
 * Reverb's ratios to grpc-java.
 */
public final class TextReport
{
    private static final int BUCKETS = 12;
    private static final int BAR_WIDTH = 40;

    private TextReport()
    {
    }

    /**
     * @param runs results.
     * @return the report.
     */
    public static String write(final List<RunResult> runs)
    {
        final StringBuilder out = new StringBuilder(4096);
        for (final RunResult r : runs)
        {
            writeRun(out, r);
        }
        if (runs.size() > 1)
        {
            writeTable(out, runs);
        }
        final List<Comparison> comparisons = Comparison.against(runs);
        if (!comparisons.isEmpty())
        {
            out.append("\nRatios (grpc-java / Reverb for latency: above 1 means Reverb is lower; " +
                "Reverb / grpc-java for throughput):\n");
            for (final Comparison c : comparisons)
            {
                out.append(String.format(Locale.ROOT,
                    "  %-28s vs %-24s p50 %6.1fx lower   p99.9 %6.1fx lower   throughput %6.1fx%n",
                    c.run().label, c.baseline().label, c.p50Ratio(), c.p999Ratio(), c.throughputRatio()));
            }
        }
        FloorComparison.appendText(out, runs);
        RoundMedians.appendText(out, runs);
        return out.toString();
    }

    private static void writeRun(final StringBuilder out, final RunResult r)
    {
        final Histogram h = r.latency;
        out.append("\n== ").append(r.label).append("  ").append(r.uri).append('\n');
        out.append("   ").append(r.describe()).append('\n');
        out.append("\nSummary:\n");
        line(out, "Count", String.format(Locale.ROOT, "%,d calls (%,d OK)", r.count, r.ok));
        line(out, "Total", String.format(Locale.ROOT, "%.2f s", r.elapsedNanos / 1e9));
        line(out, "Throughput", String.format(Locale.ROOT, "%,.1f calls/s", r.throughput()));
        if (r.streamMessages > 1 || r.payloadSize >= 64 * 1024)
        {
            line(out, "Messages", String.format(Locale.ROOT, "%,.1f messages/s, %s", r.messagesPerSecond(),
                Formats.bytesRate(r.bytesPerSecond())));
        }
        if (h.getTotalCount() > 0)
        {
            line(out, "Min", Formats.micros(h.getMinValue() / 1000.0));
            line(out, "Avg", Formats.micros(h.getMean() / 1000.0));
            line(out, "Max", Formats.micros(h.getMaxValue() / 1000.0));
            out.append("\nLatency distribution").append(r.rps > 0 ? " (from intended send time):\n" : ":\n");
            for (final double p : JsonReport.PERCENTILES)
            {
                out.append(String.format(Locale.ROOT, "  %6s %% in %s%n", JsonReport.percentileName(p),
                    Formats.micros(h.getValueAtPercentile(p) / 1000.0)));
            }
            if (r.serviceTime != null && r.serviceTime.getTotalCount() > 0)
            {
                out.append(String.format(Locale.ROOT, "  (from actual send, uncorrected: p50 %s, p99.9 %s)%n",
                    Formats.micros(r.serviceTime.getValueAtPercentile(50) / 1000.0),
                    Formats.micros(r.serviceTime.getValueAtPercentile(99.9) / 1000.0)));
            }
            writeHistogram(out, h);
        }
        out.append("\nStatus code distribution:\n");
        for (final Map.Entry<String, Long> e : r.statuses.entrySet())
        {
            out.append(String.format(Locale.ROOT, "  [%s]  %,d responses%n", e.getKey(), e.getValue()));
        }
    }

    private static void line(final StringBuilder out, final String name, final String value)
    {
        out.append(String.format(Locale.ROOT, "  %-12s %s%n", name + ":", value));
    }

    private static void writeHistogram(final StringBuilder out, final Histogram h)
    {
        out.append("\nResponse time histogram (log-spaced buckets):\n");
        final double lo = Math.max(1, h.getMinValue());
        final double hi = Math.max(lo + 1, h.getMaxValue());
        final double step = Math.pow(hi / lo, 1.0 / BUCKETS);
        final long[] counts = new long[BUCKETS];
        final double[] upper = new double[BUCKETS];
        long maxCount = 1;
        double from = lo;
        for (int i = 0; i < BUCKETS; i++)
        {
            final double to = i == BUCKETS - 1 ? hi : from * step;
            counts[i] = h.getCountBetweenValues((long)Math.ceil(from), (long)Math.floor(to));
            if (i > 0)
            {
                // A value on a bucket border was counted in the previous bucket already.
                counts[i] -= h.getCountAtValue((long)Math.ceil(from));
                counts[i] = Math.max(0, counts[i]);
            }
            upper[i] = to;
            maxCount = Math.max(maxCount, counts[i]);
            from = to;
        }
        for (int i = 0; i < BUCKETS; i++)
        {
            final int bar = (int)Math.round((double)counts[i] * BAR_WIDTH / maxCount);
            out.append(String.format(Locale.ROOT, "  %11s [%,d]\t|%s%n", Formats.micros(upper[i] / 1000.0), counts[i],
                "#".repeat(bar)));
        }
    }

    private static void writeTable(final StringBuilder out, final List<RunResult> runs)
    {
        out.append("\nSide by side (latency in µs):\n");
        int width = 28; // wider for long labels, e.g. "reverb shm aliasing directWrite=false"
        for (final RunResult r : runs)
        {
            width = Math.max(width, r.label.length());
        }
        out.append(String.format(Locale.ROOT, "  %-" + width + "s %12s %9s %9s %9s %9s %10s %10s %10s%n",
            "run", "calls/s", "min", "p50", "p90", "p99", "p99.9", "p99.99", "max"));
        for (final RunResult r : runs)
        {
            final Histogram h = r.latency;
            final boolean empty = h.getTotalCount() == 0;
            out.append(String.format(Locale.ROOT, "  %-" + width + "s %,12.0f %9.2f %9.2f %9.2f %9.2f %10.2f %10.2f %10.2f%n",
                r.label, r.throughput(),
                empty ? Double.NaN : h.getMinValue() / 1000.0,
                r.percentileMicros(50), r.percentileMicros(90), r.percentileMicros(99),
                r.percentileMicros(99.9), r.percentileMicros(99.99),
                empty ? Double.NaN : h.getMaxValue() / 1000.0));
        }
    }
}
