package io.reverb.bench.load;

/**
 * gRPC status code names by number (both Reverb and grpc-java use the same 17 codes).
 */
public final class StatusCodes
{
    private static final String[] NAMES =
    {
        "OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND", "ALREADY_EXISTS",
        "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE",
        "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED"
    };

    /** Number of codes; arrays indexed by code have one more slot for unknown codes. */
    public static final int COUNT = NAMES.length;

    private StatusCodes()
    {
    }

    /**
     * @param code status code number.
     * @return its name, or {@code CODE_n} for a number outside 0..16.
     */
    public static String name(final int code)
    {
        return code >= 0 && code < NAMES.length ? NAMES[code] : "CODE_" + code;
    }

    /**
     * @param code status code number.
     * @return index into a counts array of length {@code COUNT + 1}; unknown codes share the last slot.
     */
    public static int slot(final int code)
    {
        return code >= 0 && code < NAMES.length ? code : NAMES.length;
    }
}
