package io.reverb.bench.report;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.reverb.bench.load.RunResult;
import org.HdrHistogram.Histogram;

import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.zip.DataFormatException;

/**
 * Results as JSON (Jackson): summary figures for people and scripts, plus each run's full HdrHistogram
 * (compressed, base64) so that {@link #read(String)} can rebuild the runs and an HTML report can
 * compare runs made by separate invocations. Numbers that are not finite (a percentile of an empty
 * histogram) are written as {@code null}.
 */
public final class JsonReport
{
    /** Percentiles every report shows. */
    public static final double[] PERCENTILES = {50, 90, 99, 99.9, 99.99};

    private static final ObjectMapper MAPPER = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);

    private JsonReport()
    {
    }

    /**
     * @param runs results to write.
     * @return a JSON document {@code {"tool":"reverb-bench","runs":[...],"comparisons":[...]}}.
     */
    public static String write(final List<RunResult> runs)
    {
        final ObjectNode root = MAPPER.createObjectNode();
        root.put("tool", "reverb-bench");
        final ArrayNode runNodes = root.putArray("runs");
        for (final RunResult r : runs)
        {
            writeRun(runNodes.addObject(), r);
        }
        final ArrayNode comparisons = root.putArray("comparisons");
        for (final Comparison c : Comparison.against(runs))
        {
            final ObjectNode node = comparisons.addObject();
            node.put("run", c.run().label);
            node.put("baseline", c.baseline().label);
            number(node, "p50LowerBy", c.p50Ratio());
            number(node, "p99_9LowerBy", c.p999Ratio());
            number(node, "throughputTimes", c.throughputRatio());
        }
        FloorComparison.writeJson(root.putArray("floorComparisons"), runs);
        RoundMedians.writeJson(root.putArray("roundMedians"), runs);
        try
        {
            return MAPPER.writeValueAsString(root) + "\n";
        }
        catch (final JsonProcessingException ex)
        {
            throw new UncheckedIOException(ex);
        }
    }

    private static void writeRun(final ObjectNode out, final RunResult r)
    {
        out.put("label", r.label);
        out.put("round", r.round);
        out.put("framework", r.framework);
        out.put("uri", r.uri);
        out.put("server", r.server);
        out.put("polling", r.polling);
        out.put("kind", r.kind);
        out.put("payloadSize", r.payloadSize);
        out.put("streamMessages", r.streamMessages);
        out.put("concurrency", r.concurrency);
        number(out, "rps", r.rps);
        out.put("count", r.count);
        out.put("ok", r.ok);
        out.put("messages", r.messages);
        out.put("elapsedNanos", r.elapsedNanos);
        number(out, "throughput", r.throughput());
        number(out, "messagesPerSecond", r.messagesPerSecond());
        number(out, "bytesPerSecond", r.bytesPerSecond());
        summary(out.putObject("latencyMicros"), r.latency);
        if (r.serviceTime != null)
        {
            summary(out.putObject("serviceTimeMicros"), r.serviceTime);
        }
        final ObjectNode statuses = out.putObject("statuses");
        for (final Map.Entry<String, Long> e : r.statuses.entrySet())
        {
            statuses.put(e.getKey(), e.getValue());
        }
        out.put("timestamp", r.timestamp);
        out.put("environment", r.environment);
        if (r.serviceTime != null)
        {
            out.put("serviceTimeHistogram", encode(r.serviceTime));
        }
        out.put("histogram", encode(r.latency));
    }

    /** Whole numbers as integers (as the reports always wrote them), non-finite ones as null. */
    private static void number(final ObjectNode out, final String name, final double value)
    {
        if (Double.isNaN(value) || Double.isInfinite(value))
        {
            out.putNull(name);
        }
        else if (value == Math.rint(value) && Math.abs(value) < 1e15)
        {
            out.put(name, (long)value);
        }
        else
        {
            out.put(name, value);
        }
    }

    private static void summary(final ObjectNode out, final Histogram h)
    {
        final boolean empty = h.getTotalCount() == 0;
        number(out, "min", empty ? Double.NaN : h.getMinValue() / 1000.0);
        number(out, "avg", empty ? Double.NaN : h.getMean() / 1000.0);
        number(out, "stddev", empty ? Double.NaN : h.getStdDeviation() / 1000.0);
        for (final double p : PERCENTILES)
        {
            number(out, "p" + percentileName(p), empty ? Double.NaN : h.getValueAtPercentile(p) / 1000.0);
        }
        number(out, "max", empty ? Double.NaN : h.getMaxValue() / 1000.0);
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
        return Base64.getEncoder().encodeToString(Arrays.copyOf(buffer.array(), length));
    }

    private static Histogram decode(final String base64)
    {
        try
        {
            return Histogram.decodeFromCompressedByteBuffer(ByteBuffer.wrap(Base64.getDecoder().decode(base64)), 0);
        }
        catch (final DataFormatException | IllegalArgumentException ex)
        {
            throw new IllegalArgumentException("bad histogram in JSON result", ex);
        }
    }

    /**
     * Reads the runs back from a document written by {@link #write(List)}.
     *
     * @param json the document.
     * @return its runs, with their histograms.
     * @throws IllegalArgumentException if the document is not JSON or not a reverb-bench result.
     */
    public static List<RunResult> read(final String json)
    {
        final JsonNode root;
        try
        {
            root = MAPPER.readTree(json);
        }
        catch (final JsonProcessingException ex)
        {
            throw new IllegalArgumentException("not JSON: " + ex.getOriginalMessage(), ex);
        }
        if (root == null || !root.path("runs").isArray())
        {
            throw new IllegalArgumentException("not a reverb-bench JSON result (no \"runs\")");
        }
        final List<RunResult> runs = new ArrayList<>();
        for (final JsonNode m : root.get("runs"))
        {
            final RunResult r = new RunResult();
            r.label = str(m, "label");
            r.round = Math.max(1, m.path("round").asInt(1));
            r.framework = str(m, "framework");
            r.uri = str(m, "uri");
            r.server = str(m, "server");
            r.polling = str(m, "polling");
            r.kind = str(m, "kind");
            r.payloadSize = m.path("payloadSize").asInt();
            r.streamMessages = m.path("streamMessages").asInt();
            r.concurrency = m.path("concurrency").asInt();
            r.rps = m.path("rps").asDouble();
            r.count = m.path("count").asLong();
            r.ok = m.path("ok").asLong();
            r.messages = m.path("messages").asLong();
            r.elapsedNanos = m.path("elapsedNanos").asLong();
            r.timestamp = str(m, "timestamp");
            r.environment = str(m, "environment");
            for (final Map.Entry<String, JsonNode> e : m.path("statuses").properties())
            {
                r.statuses.put(e.getKey(), e.getValue().asLong());
            }
            final String histogram = str(m, "histogram");
            if (histogram == null)
            {
                throw new IllegalArgumentException("run \"" + r.label + "\" has no histogram");
            }
            r.latency = decode(histogram);
            final String service = str(m, "serviceTimeHistogram");
            r.serviceTime = service == null ? null : decode(service);
            runs.add(r);
        }
        return runs;
    }

    private static String str(final JsonNode m, final String key)
    {
        final JsonNode v = m.get(key);
        return v == null || v.isNull() ? null : v.asText();
    }
}
