package io.reverb.bench.load;

import org.HdrHistogram.Histogram;

import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;

/**
 * Everything one measured run produced: what was run, how many calls ended with which status,
 * and the latency histogram (nanoseconds). Reports read it; JSON files round-trip it so that
 * runs from several invocations can be compared in one HTML report.
 */
public final class RunResult
{
    /** Name shown in reports, e.g. {@code "reverb shm"}. */
    public String label;
    /** {@code "reverb"} or {@code "grpc-java"}. */
    public String framework;
    /** The address the client called. */
    public String uri;
    /** {@code separate-process}, {@code same-process} or {@code none} (an external server). */
    public String server;
    /** Polling mode asked for, or empty for the transport default. */
    public String polling = "";
    /** Call kind, as on the command line. */
    public String kind;
    /** Payload bytes per request (unary) or per streamed message. */
    public int payloadSize;
    /** Messages per streaming call (1 for unary). */
    public int streamMessages = 1;
    /** Calls outstanding (closed loop) or the cap on them (open loop). */
    public int concurrency;
    /** Fixed rate of the open loop in calls/s, 0 for a closed loop. */
    public double rps;
    /** Calls that ended, with any status. */
    public long count;
    /** Calls that ended OK. */
    public long ok;
    /** Response messages received (streaming; equals {@code ok} for unary). */
    public long messages;
    /** Wall time of the measured part. */
    public long elapsedNanos;
    /** Calls by status name. */
    public Map<String, Long> statuses = new LinkedHashMap<>();
    /** Latency of OK calls in ns; in an open loop, measured from the intended send time. */
    public Histogram latency;
    /** Open loop only: latency from the actual send time (what a naive tool reports), else null. */
    public Histogram serviceTime;
    /** When the run ended, ISO-8601. */
    public String timestamp;
    /** {@code java.version} and {@code os.arch}, number of processors. */
    public String environment;
    /**
     * Which round of an alternated run ({@code --rounds N}: the whole target list N times over) this is, from 1;
     * 1 for a run without rounds. Runs are compared only with runs of their own round.
     */
    public int round = 1;

    /**
     * Marks this run as one of round {@code round} of {@code rounds}: its {@link #round}, and a label ending in
     * {@code " #N"} when there is more than one round.
     *
     * @param round  this run's round, from 1.
     * @param rounds how many rounds the invocation runs.
     */
    public void markRound(final int round, final int rounds)
    {
        this.round = round;
        if (rounds > 1)
        {
            label = label + " #" + round;
        }
    }

    /**
     * @return the label without the {@code " #N"} that {@code --rounds} appends to a round's runs: the same for a
     *     target's runs in every round.
     */
    public String baseLabel()
    {
        final String suffix = " #" + round;
        return label != null && label.endsWith(suffix) ? label.substring(0, label.length() - suffix.length()) : label;
    }

    /**
     * @return calls per second over the measured wall time.
     */
    public double throughput()
    {
        return elapsedNanos == 0 ? 0 : count * 1e9 / elapsedNanos;
    }

    /**
     * @return response messages per second over the measured wall time.
     */
    public double messagesPerSecond()
    {
        return elapsedNanos == 0 ? 0 : messages * 1e9 / elapsedNanos;
    }

    /**
     * @return payload bytes received per second (responses only).
     */
    public double bytesPerSecond()
    {
        return messagesPerSecond() * payloadSize;
    }

    /**
     * @param percentile 0..100.
     * @return latency at that percentile in microseconds, or NaN without samples.
     */
    public double percentileMicros(final double percentile)
    {
        return latency.getTotalCount() == 0 ? Double.NaN : latency.getValueAtPercentile(percentile) / 1000.0;
    }

    /**
     * @return a one-line description of what was run.
     */
    public String describe()
    {
        final StringBuilder text = new StringBuilder();
        text.append(kind).append(' ').append(payloadSize).append(" B");
        if (streamMessages > 1)
        {
            text.append(" x").append(streamMessages);
        }
        text.append(", c=").append(concurrency);
        if (rps > 0)
        {
            text.append(", open loop ").append(String.format(Locale.ROOT, "%.0f", rps)).append(" calls/s");
        }
        else
        {
            text.append(", closed loop");
        }
        text.append(", server ").append(server);
        if (polling != null && !polling.isEmpty())
        {
            text.append(", polling ").append(polling);
        }
        return text.toString();
    }
}
