package io.reverb.codegen;

/**
 * The four call shapes, named as rpc-core's {@code MethodDescriptor.MethodType} constants.
 */
public enum MethodKind
{
    UNARY("unary"),
    SERVER_STREAMING("server-streaming"),
    CLIENT_STREAMING("client-streaming"),
    BIDI_STREAMING("bidi-streaming");

    private final String description;

    MethodKind(final String description)
    {
        this.description = description;
    }

    /**
     * @param clientStreaming whether the method takes a stream of requests.
     * @param serverStreaming whether the method returns a stream of responses.
     * @return the kind.
     */
    public static MethodKind of(final boolean clientStreaming, final boolean serverStreaming)
    {
        if (clientStreaming)
        {
            return serverStreaming ? BIDI_STREAMING : CLIENT_STREAMING;
        }
        return serverStreaming ? SERVER_STREAMING : UNARY;
    }

    /**
     * @return human-readable form for javadoc, e.g. {@code "server-streaming"}.
     */
    public String description()
    {
        return description;
    }

    /**
     * @return true when the client sends a {@code Flux} of requests.
     */
    public boolean clientStreams()
    {
        return this == CLIENT_STREAMING || this == BIDI_STREAMING;
    }

    /**
     * @return true when the response is a {@code Flux}.
     */
    public boolean serverStreams()
    {
        return this == SERVER_STREAMING || this == BIDI_STREAMING;
    }

    /**
     * @return the name of the {@code ClientCalls}/{@code ServerCalls} factory for this kind.
     */
    public String callsMethod()
    {
        return switch (this)
        {
            case UNARY -> "unary";
            case SERVER_STREAMING -> "serverStreaming";
            case CLIENT_STREAMING -> "clientStreaming";
            case BIDI_STREAMING -> "bidiStreaming";
        };
    }
}
