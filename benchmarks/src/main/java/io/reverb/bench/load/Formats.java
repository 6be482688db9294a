package io.reverb.bench.load;

import java.util.Locale;

/**
 * Number formatting shared by the reports.
 */
public final class Formats
{
    private Formats()
    {
    }

    /**
     * @param micros a latency in microseconds.
     * @return e.g. {@code "0.58 µs"}, {@code "105.6 µs"}, {@code "4.14 ms"}, {@code "1.20 s"}.
     */
    public static String micros(final double micros)
    {
        if (Double.isNaN(micros))
        {
            return "-";
        }
        if (micros < 10)
        {
            return String.format(Locale.ROOT, "%.2f µs", micros);
        }
        if (micros < 1000)
        {
            return String.format(Locale.ROOT, "%.1f µs", micros);
        }
        if (micros < 1_000_000)
        {
            return String.format(Locale.ROOT, "%.2f ms", micros / 1000);
        }
        return String.format(Locale.ROOT, "%.2f s", micros / 1_000_000);
    }

    /**
     * @param bytesPerSecond a rate.
     * @return e.g. {@code "365.0 MB/s"} (decimal units, as network throughput is usually given).
     */
    public static String bytesRate(final double bytesPerSecond)
    {
        if (bytesPerSecond >= 1e9)
        {
            return String.format(Locale.ROOT, "%.2f GB/s", bytesPerSecond / 1e9);
        }
        if (bytesPerSecond >= 1e6)
        {
            return String.format(Locale.ROOT, "%.1f MB/s", bytesPerSecond / 1e6);
        }
        return String.format(Locale.ROOT, "%.1f kB/s", bytesPerSecond / 1e3);
    }

    /**
     * @param bytes a size.
     * @return e.g. {@code "64 B"}, {@code "4 KiB"}, {@code "16 MiB"} (binary units, as payload sizes are given).
     */
    public static String bytes(final long bytes)
    {
        if (bytes >= (1 << 20) && bytes % (1 << 20) == 0)
        {
            return (bytes >> 20) + " MiB";
        }
        if (bytes >= 1024 && bytes % 1024 == 0)
        {
            return (bytes >> 10) + " KiB";
        }
        return bytes + " B";
    }

    /**
     * @param text a size such as {@code 64}, {@code 4k}, {@code 4KiB}, {@code 1MiB}, {@code 1m}.
     * @return bytes (binary multiples).
     * @throws IllegalArgumentException if the size is not understood.
     */
    public static int parseSize(final String text)
    {
        final String t = text.trim().toLowerCase(Locale.ROOT).replace("ib", "").replace("b", "");
        int multiplier = 1;
        String digits = t;
        if (t.endsWith("k"))
        {
            multiplier = 1024;
            digits = t.substring(0, t.length() - 1);
        }
        else if (t.endsWith("m"))
        {
            multiplier = 1024 * 1024;
            digits = t.substring(0, t.length() - 1);
        }
        try
        {
            return Math.multiplyExact(Integer.parseInt(digits.trim()), multiplier);
        }
        catch (final NumberFormatException | ArithmeticException ex)
        {
            throw new IllegalArgumentException("not a size: " + text);
        }
    }

    /**
     * @param text a duration such as {@code 10s}, {@code 500ms}, {@code 2m}, {@code 100us}, or bare seconds.
     * @return nanoseconds.
     * @throws IllegalArgumentException if the duration is not understood.
     */
    public static long parseDuration(final String text)
    {
        final String t = text.trim().toLowerCase(Locale.ROOT);
        try
        {
            if (t.endsWith("ms"))
            {
                return (long)(Double.parseDouble(t.substring(0, t.length() - 2)) * 1e6);
            }
            if (t.endsWith("us") || t.endsWith("µs"))
            {
                return (long)(Double.parseDouble(t.substring(0, t.length() - 2)) * 1e3);
            }
            if (t.endsWith("s"))
            {
                return (long)(Double.parseDouble(t.substring(0, t.length() - 1)) * 1e9);
            }
            if (t.endsWith("m"))
            {
                return (long)(Double.parseDouble(t.substring(0, t.length() - 1)) * 60e9);
            }
            return (long)(Double.parseDouble(t) * 1e9);
        }
        catch (final NumberFormatException ex)
        {
            throw new IllegalArgumentException("not a duration: " + text);
        }
    }
}
