package io.reverb.bench.report;

import io.reverb.bench.load.RunResult;
import org.HdrHistogram.Histogram;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.zip.DataFormatException;

/**
 * Results as JSON: summary figures for people and scripts, plus each run's full HdrHistogram
 * (compressed, base64) so that {@link #read(String)} can rebuild the runs and an HTML report can
 * compare runs made by separate invocations.
 */
public final class JsonReport
{
    /** Percentiles every report shows. */
    public static final double[] PERCENTILES = {50, 90, 99, 99.9, 99.99};

    private JsonReport()
    {
    }

    /**
     * @param runs results to write.
     * @return a JSON document {@code {"tool":"reverb-bench","runs":[...],"comparisons":[...]}}.
     */
    public static String write(final List<RunResult> runs)
    {
        final StringBuilder out = new StringBuilder(4096);
        out.append("{\n  \"tool\": \"reverb-bench\",\n  \"runs\": [");
        for (int i = 0; i < runs.size(); i++)
        {
            out.append(i == 0 ? "\n" : ",\n");
            writeRun(out, runs.get(i));
        }
        out.append("\n  ],\n  \"comparisons\": [");
        final List<Comparison> comparisons = Comparison.against(runs);
        for (int i = 0; i < comparisons.size(); i++)
        {
            final Comparison c = comparisons.get(i);
            out.append(i == 0 ? "\n" : ",\n");
            out.append("    {\"run\": ").append(Json.quote(c.run().label))
                .append(", \"baseline\": ").append(Json.quote(c.baseline().label))
                .append(", \"p50LowerBy\": ").append(Json.number(c.p50Ratio()))
                .append(", \"p99_9LowerBy\": ").append(Json.number(c.p999Ratio()))
                .append(", \"throughputTimes\": ").append(Json.number(c.throughputRatio()))
                .append('}');
        }
        out.append("\n  ]\n}\n");
        return out.toString();
    }

    private static void writeRun(final StringBuilder out, final RunResult r)
    {
        out.append("    {\n");
        field(out, "label", Json.quote(r.label));
        field(out, "framework", Json.quote(r.framework));
        field(out, "uri", Json.quote(r.uri));
        field(out, "server", Json.quote(r.server));
        field(out, "polling", Json.quote(r.polling));
        field(out, "kind", Json.quote(r.kind));
        field(out, "payloadSize", Integer.toString(r.payloadSize));
        field(out, "streamMessages", Integer.toString(r.streamMessages));
        field(out, "concurrency", Integer.toString(r.concurrency));
        field(out, "rps", Json.number(r.rps));
        field(out, "count", Long.toString(r.count));
        field(out, "ok", Long.toString(r.ok));
        field(out, "messages", Long.toString(r.messages));
        field(out, "elapsedNanos", Long.toString(r.elapsedNanos));
        field(out, "throughput", Json.number(r.throughput()));
        field(out, "messagesPerSecond", Json.number(r.messagesPerSecond()));
        field(out, "bytesPerSecond", Json.number(r.bytesPerSecond()));
        field(out, "latencyMicros", summary(r.latency));
        if (r.serviceTime != null)
        {
            field(out, "serviceTimeMicros", summary(r.serviceTime));
        }
        final StringBuilder statuses = new StringBuilder("{");
        for (final Map.Entry<String, Long> e : r.statuses.entrySet())
        {
            statuses.append(statuses.length() > 1 ? ", " : "").append(Json.quote(e.getKey())).append(": ").append(e.getValue());
        }
        field(out, "statuses", statuses.append('}').toString());
        field(out, "timestamp", Json.quote(r.timestamp));
        field(out, "environment", Json.quote(r.environment));
        if (r.serviceTime != null)
        {
            field(out, "serviceTimeHistogram", Json.quote(encode(r.serviceTime)));
        }
        out.append("      \"histogram\": ").append(Json.quote(encode(r.latency))).append("\n    }");
    }

    private static void field(final StringBuilder out, final String name, final String json)
    {
        out.append("      ").append(Json.quote(name)).append(": ").append(json).append(",\n");
    }

    private static String summary(final Histogram h)
    {
        final boolean empty = h.getTotalCount() == 0;
        final StringBuilder out = new StringBuilder("{");
        out.append("\"min\": ").append(Json.number(empty ? Double.NaN : h.getMinValue() / 1000.0));
        out.append(", \"avg\": ").append(Json.number(empty ? Double.NaN : h.getMean() / 1000.0));
        out.append(", \"stddev\": ").append(Json.number(empty ? Double.NaN : h.getStdDeviation() / 1000.0));
        for (final double p : PERCENTILES)
        {
            out.append(", \"p").append(percentileName(p)).append("\": ")
                .append(Json.number(empty ? Double.NaN : h.getValueAtPercentile(p) / 1000.0));
        }
        out.append(", \"max\": ").append(Json.number(empty ? Double.NaN : h.getMaxValue() / 1000.0));
        return out.append('}').toString();
    }

    /**
     * @param percentile e.g. 99.9.
     * @return {@code "99.9"}, or {@code "50"} for whole numbers.
     */
    public static String percentileName(final double percentile)
    {
        return percentile == Math.rint(percentile) ? Long.toString((long)percentile) : Double.toString(percentile);
    }

    private static String encode(final Histogram h)
    {
        final ByteBuffer buffer = ByteBuffer.allocate(h.getNeededByteBufferCapacity());
        final int length = h.encodeIntoCompressedByteBuffer(buffer);
        return Base64.getEncoder().encodeToString(java.util.Arrays.copyOf(buffer.array(), length));
    }

    private static Histogram decode(final String base64)
    {
        try
        {
            return Histogram.decodeFromCompressedByteBuffer(ByteBuffer.wrap(Base64.getDecoder().decode(base64)), 0);
        }
        catch (final DataFormatException ex)
        {
            throw new IllegalArgumentException("bad histogram in JSON result", ex);
        }
    }

    /**
     * Reads the runs back from a document written by {@link #write(List)}.
     *
     * @param json the document.
     * @return its runs, with their histograms.
     * @throws IllegalArgumentException if the document is not a reverb-bench result.
     */
    @SuppressWarnings("unchecked")
    public static List<RunResult> read(final String json)
    {
        final Object root = Json.parse(json);
        if (!(root instanceof Map<?, ?> map) || !(map.get("runs") instanceof List<?> list))
        {
            throw new IllegalArgumentException("not a reverb-bench JSON result (no \"runs\")");
        }
        final List<RunResult> runs = new ArrayList<>();
        for (final Object item : list)
        {
            final Map<String, Object> m = (Map<String, Object>)item;
            final RunResult r = new RunResult();
            r.label = str(m, "label");
            r.framework = str(m, "framework");
            r.uri = str(m, "uri");
            r.server = str(m, "server");
            r.polling = str(m, "polling");
            r.kind = str(m, "kind");
            r.payloadSize = (int)num(m, "payloadSize");
            r.streamMessages = (int)num(m, "streamMessages");
            r.concurrency = (int)num(m, "concurrency");
            r.rps = num(m, "rps");
            r.count = (long)num(m, "count");
            r.ok = (long)num(m, "ok");
            r.messages = (long)num(m, "messages");
            r.elapsedNanos = (long)num(m, "elapsedNanos");
            r.timestamp = str(m, "timestamp");
            r.environment = str(m, "environment");
            if (m.get("statuses") instanceof Map<?, ?> statuses)
            {
                statuses.forEach((k, v) -> r.statuses.put((String)k, ((Double)v).longValue()));
            }
            r.latency = decode(str(m, "histogram"));
            final String service = str(m, "serviceTimeHistogram");
            r.serviceTime = service == null ? null : decode(service);
            runs.add(r);
        }
        return runs;
    }

    private static String str(final Map<String, Object> m, final String key)
    {
        final Object v = m.get(key);
        return v == null ? null : v.toString();
    }

    private static double num(final Map<String, Object> m, final String key)
    {
        final Object v = m.get(key);
        return v instanceof Double d ? d : 0;
    }
}
