package io.reverb.bench.target;

import java.time.Duration;

/**
 * Framework knobs a benchmark run may set. Each target applies what it understands and says
 * (through {@link #describe()}) what was asked for.
 *
 * @param polling  Reverb completion polling mode ({@code BUSY}, {@code EVENT}, {@code ADAPTIVE}),
 *                 or null for the transport's default.
 * @param deadline deadline of every call, or null for none.
 */
public record TargetSettings(String polling, Duration deadline)
{
    /** No settings: every framework's defaults. */
    public static final TargetSettings DEFAULTS = new TargetSettings(null);

    /**
     * @param polling polling mode or null; calls have no deadline.
     */
    public TargetSettings(final String polling)
    {
        this(polling, null);
    }

    /**
     * @return a short human-readable summary, empty when defaults.
     */
    public String describe()
    {
        return polling == null ? "" : "polling=" + polling;
    }
}
