package io.reverb.bench.cli;

/**
 * A reverb-cli failure with the exit code scripts see: {@link #CALL_FAILED}, {@link #USAGE} or
 * {@link #NO_CONNECTION}; the message is printed on stderr as it is.
 */
public final class CliException extends RuntimeException
{
    /** The call (or a reflection lookup) ended with a status other than OK. */
    public static final int CALL_FAILED = 1;
    /** Bad command line or input (bad JSON, an unknown flag, a method that is not unary or server-streaming). */
    public static final int USAGE = 2;
    /** No connection to the server, or no reflection service there. */
    public static final int NO_CONNECTION = 3;

    private static final long serialVersionUID = 1L;

    private final int exitCode;

    /**
     * @param exitCode the process's exit code.
     * @param message  what to print on stderr.
     */
    public CliException(final int exitCode, final String message)
    {
        super(message);
        this.exitCode = exitCode;
    }

    /**
     * @return the process's exit code.
     */
    public int exitCode()
    {
        return exitCode;
    }
}
