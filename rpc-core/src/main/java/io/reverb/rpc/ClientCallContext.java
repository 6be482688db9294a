package io.reverb.rpc;

/**
 * Client side view of one call for {@link ClientInterceptor}s: the method, the options, the request metadata
 * (mutable until the call is sent), and what the server answered (response headers, trailers, status), filled
 * in as they arrive.
 */
public final class ClientCallContext
{
    private final MethodDescriptor<?, ?> method;
    private final CallOptions callOptions;
    private final Metadata requestMetadata;
    private volatile Metadata responseHeaders;
    private volatile Metadata trailers;
    private volatile Status status;

    /**
     * Created by the runtime for each call.
     *
     * @param method      the method.
     * @param callOptions the options.
     */
    public ClientCallContext(final MethodDescriptor<?, ?> method, final CallOptions callOptions)
    {
        this.method = method;
        this.callOptions = callOptions;
        this.requestMetadata = callOptions.metadata() != null ? callOptions.metadata().copy() : new Metadata();
    }

    /**
     * @return the method.
     */
    public MethodDescriptor<?, ?> method()
    {
        return method;
    }

    /**
     * @return the options.
     */
    public CallOptions callOptions()
    {
        return callOptions;
    }

    /**
     * @return mutable request metadata, sent when the call starts (after the interceptors ran).
     */
    public Metadata requestMetadata()
    {
        return requestMetadata;
    }

    /**
     * @return the server's initial metadata, or null until it arrived (it arrives before the first response).
     */
    public Metadata responseHeaders()
    {
        return responseHeaders;
    }

    /**
     * @return the trailers, or null until the call ended.
     */
    public Metadata trailers()
    {
        return trailers;
    }

    /**
     * @return the status, or null until the call ended.
     */
    public Status status()
    {
        return status;
    }

    /**
     * Runtime use.
     *
     * @param headers headers received.
     */
    public void responseHeaders(final Metadata headers)
    {
        this.responseHeaders = headers;
    }

    /**
     * Runtime use: records how the call ended, before the subscriber is told.
     *
     * @param status   the status.
     * @param trailers the trailers.
     */
    public void closed(final Status status, final Metadata trailers)
    {
        this.trailers = trailers;
        this.status = status;
    }
}
