package io.reverb.bench.load;

import java.util.Locale;

/**
 * Shape of the calls a run makes.
 */
public enum CallKind
{
    /** One request, one response ({@code Echo}). */
    UNARY("unary"),
    /** One request, a stream of responses ({@code Stream}). */
    SERVER_STREAMING("server-streaming");

    private final String cliName;

    CallKind(final String cliName)
    {
        this.cliName = cliName;
    }

    /**
     * @return the name used on the command line and in reports.
     */
    public String cliName()
    {
        return cliName;
    }

    /**
     * @param name {@code unary} or {@code server-streaming} (also {@code streaming}).
     * @return the kind.
     * @throws IllegalArgumentException for an unknown name.
     */
    public static CallKind parse(final String name)
    {
        return switch (name.toLowerCase(Locale.ROOT))
        {
            case "unary" -> UNARY;
            case "server-streaming", "streaming", "server_streaming" -> SERVER_STREAMING;
            default -> throw new IllegalArgumentException("--kind must be unary or server-streaming: " + name);
        };
    }
}
