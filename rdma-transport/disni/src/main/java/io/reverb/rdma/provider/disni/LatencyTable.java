package io.reverb.rdma.provider.disni;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The latency table {@link RdmaHostCheck} prints on the console: 64-byte round-trip p50 and p99 of
 * {@code rdma://} next to {@code tcp://}, per polling mode (BUSY and ADAPTIVE).
 */
final class LatencyTable
{
    /** The modes the table shows. */
    static final List<String> MODES = List.of("BUSY", "ADAPTIVE");

    private static final Pattern PING_PONG_ROW = Pattern.compile("^\\s*(BUSY|ADAPTIVE|EVENT)\\s+([0-9.]+)\\s+([0-9.]+)\\b.*");

    /**
     * One measurement.
     *
     * @param scheme     "rdma" or "tcp".
     * @param mode       polling mode.
     * @param p50Micros  median round trip.
     * @param p99Micros  99th percentile.
     */
    record Cell(String scheme, String mode, double p50Micros, double p99Micros)
    {
    }

    private LatencyTable()
    {
    }

    /**
     * @param scheme the scheme the ping-pong ran over.
     * @param lines  {@code EnginePingPong}'s output (its table rows start with the mode, then p50 and p99 in us).
     * @return the cells found.
     */
    static List<Cell> parsePingPong(final String scheme, final List<String> lines)
    {
        final List<Cell> cells = new ArrayList<>();
        for (final String line : lines)
        {
            final Matcher matcher = PING_PONG_ROW.matcher(line);
            if (matcher.matches())
            {
                cells.add(new Cell(scheme, matcher.group(1), Double.parseDouble(matcher.group(2)),
                    Double.parseDouble(matcher.group(3))));
            }
        }
        return cells;
    }

    /**
     * @param cells measurements (any order; missing ones print as "-").
     * @return the table, one line per mode, with a header.
     */
    static String format(final List<Cell> cells)
    {
        final StringBuilder table = new StringBuilder();
        table.append(String.format(Locale.ROOT, "%-9s %12s %12s %12s %12s%n", "64 B RTT", "p50 rdma us", "p50 tcp us",
            "p99 rdma us", "p99 tcp us"));
        for (final String mode : MODES)
        {
            table.append(String.format(Locale.ROOT, "%-9s %12s %12s %12s %12s%n", mode,
                value(cells, "rdma", mode, true), value(cells, "tcp", mode, true),
                value(cells, "rdma", mode, false), value(cells, "tcp", mode, false)));
        }
        return table.toString();
    }

    /**
     * @param cells measurements.
     * @return true if every mode has both schemes.
     */
    static boolean complete(final List<Cell> cells)
    {
        for (final String mode : MODES)
        {
            if (find(cells, "rdma", mode) == null || find(cells, "tcp", mode) == null)
            {
                return false;
            }
        }
        return true;
    }

    private static String value(final List<Cell> cells, final String scheme, final String mode, final boolean p50)
    {
        final Cell cell = find(cells, scheme, mode);
        return cell == null ? "-" : String.format(Locale.ROOT, "%.2f", p50 ? cell.p50Micros() : cell.p99Micros());
    }

    private static Cell find(final List<Cell> cells, final String scheme, final String mode)
    {
        for (final Cell cell : cells)
        {
            if (cell.scheme().equals(scheme) && cell.mode().equals(mode))
            {
                return cell;
            }
        }
        return null;
    }
}
