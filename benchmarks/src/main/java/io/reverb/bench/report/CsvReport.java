package io.reverb.bench.report;

import io.reverb.bench.load.RunResult;
import org.HdrHistogram.Histogram;

import java.util.List;
import java.util.Locale;

/**
 * One line per run, latencies in microseconds, for spreadsheets and plotting scripts.
 */
public final class CsvReport
{
    /** The header line. */
    public static final String HEADER = "label,framework,uri,server,polling,kind,payload_bytes,stream_messages," +
        "concurrency,rps,count,ok,errors,elapsed_s,calls_per_s,messages_per_s," +
        "min_us,avg_us,p50_us,p90_us,p99_us,p99_9_us,p99_99_us,max_us";

    private CsvReport()
    {
    }

    /**
     * @param runs results.
     * @return header and one line per run.
     */
    public static String write(final List<RunResult> runs)
    {
        final StringBuilder out = new StringBuilder(HEADER).append('\n');
        for (final RunResult r : runs)
        {
            final Histogram h = r.latency;
            final boolean empty = h.getTotalCount() == 0;
            out.append(String.join(",", cell(r.label), cell(r.framework), cell(r.uri), cell(r.server), cell(r.polling),
                cell(r.kind), Integer.toString(r.payloadSize), Integer.toString(r.streamMessages),
                Integer.toString(r.concurrency), num(r.rps), Long.toString(r.count), Long.toString(r.ok),
                Long.toString(r.count - r.ok), num(r.elapsedNanos / 1e9), num(r.throughput()), num(r.messagesPerSecond()),
                num(empty ? Double.NaN : h.getMinValue() / 1000.0), num(empty ? Double.NaN : h.getMean() / 1000.0),
                num(r.percentileMicros(50)), num(r.percentileMicros(90)), num(r.percentileMicros(99)),
                num(r.percentileMicros(99.9)), num(r.percentileMicros(99.99)),
                num(empty ? Double.NaN : h.getMaxValue() / 1000.0))).append('\n');
        }
        return out.toString();
    }

    private static String cell(final String value)
    {
        if (value == null)
        {
            return "";
        }
        return value.contains(",") || value.contains("\"") ? "\"" + value.replace("\"", "\"\"") + "\"" : value;
    }

    private static String num(final double value)
    {
        return Double.isNaN(value) ? "" : String.format(Locale.ROOT, "%.3f", value);
    }
}
