package io.reverb.spring.boot;

import java.time.Duration;
import org.springframework.util.unit.DataSize;

/**
 * Checks of {@code reverb.*} values that binding accepts but Reverb cannot use, failing with the property's name and
 * value instead of an error deep in a builder (an {@code ArithmeticException} with no name, or every call failing).
 */
final class PropertyChecks
{
    private PropertyChecks()
    {
    }

    /**
     * @param property the property's name, e.g. {@code reverb.server.max-inbound-message-size}.
     * @param size     its value.
     * @return the size in bytes.
     * @throws IllegalArgumentException if it is not positive or does not fit an int (2 GiB less one byte).
     */
    static int messageSize(final String property, final DataSize size)
    {
        final long bytes = size.toBytes();
        if (bytes <= 0 || bytes > Integer.MAX_VALUE)
        {
            throw new IllegalArgumentException(property + "=" + size + " (" + bytes + " bytes) is out of range: a " +
                "message size must be positive and at most " + Integer.MAX_VALUE + " bytes");
        }
        return (int)bytes;
    }

    /**
     * @param property the property's name.
     * @param duration its value.
     * @throws IllegalArgumentException if it is zero or negative.
     */
    static void positive(final String property, final Duration duration)
    {
        if (duration.isZero() || duration.isNegative())
        {
            throw new IllegalArgumentException(property + "=" + duration + " must be positive");
        }
    }

    /**
     * @param property the property's name.
     * @param duration its value.
     * @throws IllegalArgumentException if it is negative.
     */
    static void notNegative(final String property, final Duration duration)
    {
        if (duration.isNegative())
        {
            throw new IllegalArgumentException(property + "=" + duration + " must not be negative");
        }
    }
}
