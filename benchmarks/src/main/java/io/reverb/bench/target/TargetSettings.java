package io.reverb.bench.target;

/**
 * Framework knobs a benchmark run may set. Each target applies what it understands and says
 * (through {@link #describe()}) what was asked for.
 *
 * @param polling Reverb completion polling mode ({@code BUSY}, {@code EVENT}, {@code ADAPTIVE}),
 *                or null for the transport's default.
 */
public record TargetSettings(String polling)
{
    /** No settings: every framework's defaults. */
    public static final TargetSettings DEFAULTS = new TargetSettings(null);

    /**
     * @return a short human-readable summary, empty when defaults.
     */
    public String describe()
    {
        return polling == null ? "" : "polling=" + polling;
    }
}
