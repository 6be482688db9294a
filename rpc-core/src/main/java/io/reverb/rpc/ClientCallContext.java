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
    /** The options' metadata copied, or null until asked for when they carry none (most calls: nothing to send). */
    private Metadata requestMetadata;
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
        this.requestMetadata = callOptions.metadata() != null ? callOptions.metadata().copy() : null;
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
        Metadata metadata = requestMetadata;
        if (metadata == null)
        {
            // an interceptor asks before the call is sent, on the thread that then sends it (as for its writes)
            requestMetadata = metadata = new Metadata();
        }
        return metadata;
    }

    /**
     * Runtime use: what the call sends, read as it is sent.
     *
     * @return the request metadata, or null when nobody asked for it and the options carry none (nothing to send).
     */
    public Metadata requestMetadataToSend()
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
     * @return the trailers, or null until the call ended (an empty {@link Metadata} when it ended without any).
     */
    public Metadata trailers()
    {
        final Metadata received = trailers;
        if (received != null || status == null)
        {
            return received;
        }
        synchronized (this)
        {
            // ended without trailers: an empty one is made for the first reader (most callers never ask)
            if (trailers == null)
            {
                trailers = new Metadata();
            }
            return trailers;
        }
    }

    /**
     * @return the trailers the call ended with, or null until it ended and when it ended without any (unlike
     *         {@link #trailers()}, makes no empty {@link Metadata}).
     */
    public Metadata receivedTrailers()
    {
        return status == null ? null : trailers;
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
     * @param trailers the trailers, or null for none.
     */
    public void closed(final Status status, final Metadata trailers)
    {
        this.trailers = trailers;
        this.status = status;
    }
}
