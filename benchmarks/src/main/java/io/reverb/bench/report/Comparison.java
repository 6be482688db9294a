package io.reverb.bench.report;

import io.reverb.bench.load.RunResult;

import java.util.ArrayList;
import java.util.List;

/**
 * One run set against the baseline run of the same report.
 *
 * @param run      the run compared.
 * @param baseline the run it is compared with.
 */
public record Comparison(RunResult run, RunResult baseline)
{
    /**
     * @return how many times lower the run's median latency is than the baseline's (above 1 is better).
     */
    public double p50Ratio()
    {
        return baseline.percentileMicros(50) / run.percentileMicros(50);
    }

    /**
     * @return how many times lower the run's p99.9 latency is than the baseline's (above 1 is better).
     */
    public double p999Ratio()
    {
        return baseline.percentileMicros(99.9) / run.percentileMicros(99.9);
    }

    /**
     * @return the run's throughput as a multiple of the baseline's.
     */
    public double throughputRatio()
    {
        return run.throughput() / baseline.throughput();
    }

    /**
     * Each run of another framework is compared with the grpc-java run of the same shape (kind,
     * payload, concurrency, rate) and round, preferring grpc-java over Netty ({@code grpc://}) to in-process.
     *
     * @param runs runs of one report.
     * @return comparisons, empty when there is no grpc-java run to compare with.
     */
    public static List<Comparison> against(final List<RunResult> runs)
    {
        final List<Comparison> comparisons = new ArrayList<>();
        for (final RunResult r : runs)
        {
            if ("grpc-java".equals(r.framework) || r.latency.getTotalCount() == 0)
            {
                continue;
            }
            RunResult baseline = null;
            for (final RunResult b : runs)
            {
                if ("grpc-java".equals(b.framework) && sameShape(r, b) && b.latency.getTotalCount() > 0 &&
                    (baseline == null || (!baseline.uri.startsWith("grpc:") && b.uri.startsWith("grpc:"))))
                {
                    baseline = b;
                }
            }
            if (baseline != null)
            {
                comparisons.add(new Comparison(r, baseline));
            }
        }
        return comparisons;
    }

    private static boolean sameShape(final RunResult a, final RunResult b)
    {
        return a.kind.equals(b.kind) && a.payloadSize == b.payloadSize && a.streamMessages == b.streamMessages &&
            a.concurrency == b.concurrency && a.rps == b.rps && a.round == b.round;
    }
}
