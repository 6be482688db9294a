package io.reverb.bench.load;

/**
 * What one measured run does.
 *
 * @param kind           unary or server streaming.
 * @param payloadSize    request payload (unary) or size of each streamed message, in bytes.
 * @param streamMessages messages per server-streaming call.
 * @param concurrency    calls outstanding at once (closed loop), or the most allowed (open loop).
 * @param totalCalls     stop after this many calls, or 0 to run for {@code durationNanos}.
 * @param durationNanos  run length when {@code totalCalls} is 0.
 * @param rps            0 for a closed loop; otherwise the fixed rate of the open loop, in calls/s.
 * @param progress       print progress to stderr once a second.
 */
public record LoadSpec(
    CallKind kind,
    int payloadSize,
    int streamMessages,
    int concurrency,
    long totalCalls,
    long durationNanos,
    double rps,
    boolean progress)
{
    /**
     * Validates the spec.
     */
    public LoadSpec
    {
        if (concurrency < 1)
        {
            throw new IllegalArgumentException("concurrency must be at least 1: " + concurrency);
        }
        if (totalCalls <= 0 && durationNanos <= 0)
        {
            throw new IllegalArgumentException("give a number of calls or a duration");
        }
        if (payloadSize < 0 || streamMessages < 1 || rps < 0)
        {
            throw new IllegalArgumentException("payload, stream messages and rate must be positive");
        }
    }

    /**
     * @param calls     number of calls, or 0.
     * @param nanos     duration, used when {@code calls} is 0.
     * @param showProgress print progress.
     * @return the same run with another length, e.g. for warm-up.
     */
    public LoadSpec withLength(final long calls, final long nanos, final boolean showProgress)
    {
        return new LoadSpec(kind, payloadSize, streamMessages, concurrency, calls, nanos, rps, showProgress);
    }
}
