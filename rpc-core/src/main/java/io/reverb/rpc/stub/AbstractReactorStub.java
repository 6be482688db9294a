package io.reverb.rpc.stub;

import io.reverb.rpc.CallOptions;
import io.reverb.rpc.Metadata;
import io.reverb.rpc.RpcChannel;
import java.time.Duration;
import java.util.Objects;

/**
 * Base of generated Reactor stubs: a channel plus call options. Immutable; each {@code with*} returns a new stub
 * of the same generated type through {@link #build(RpcChannel, CallOptions)}.
 *
 * @param <S> the generated stub type.
 */
public abstract class AbstractReactorStub<S extends AbstractReactorStub<S>>
{
    private final RpcChannel channel;
    private final CallOptions callOptions;

    /**
     * @param channel     the channel calls go through.
     * @param callOptions options of every call made by this stub.
     */
    protected AbstractReactorStub(final RpcChannel channel, final CallOptions callOptions)
    {
        this.channel = Objects.requireNonNull(channel, "channel");
        this.callOptions = Objects.requireNonNull(callOptions, "callOptions");
    }

    /**
     * @param channel     the channel.
     * @param callOptions the options.
     * @return a new stub of the concrete type.
     */
    protected abstract S build(RpcChannel channel, CallOptions callOptions);

    /**
     * @return the channel.
     */
    public final RpcChannel channel()
    {
        return channel;
    }

    /**
     * @return the call options.
     */
    public final CallOptions callOptions()
    {
        return callOptions;
    }

    /**
     * @param timeout deadline from now (fixed now, as in gRPC: derive a new stub per logical operation).
     * @return a stub with the deadline.
     */
    public final S withDeadlineAfter(final Duration timeout)
    {
        return build(channel, callOptions.withDeadlineAfter(timeout));
    }

    /**
     * @param metadata metadata to send with every call, merged after what the stub already sends.
     * @return a stub with the metadata.
     */
    public final S withMetadata(final Metadata metadata)
    {
        return build(channel, callOptions.withMetadata(metadata));
    }

    /**
     * @return a stub whose calls wait for the channel to connect instead of failing fast.
     */
    public final S withWaitForReady()
    {
        return build(channel, callOptions.withWaitForReady());
    }

    /**
     * As grpc-java's {@code AbstractStub.withCompression}: requests of at least the channel's minimum size are
     * compressed with the codec of that name ({@link CallOptions#withCompression(String)}).
     *
     * @param codecName "gzip", "identity" (none) or a codec of the channel's registry.
     * @return a stub whose calls compress their requests.
     */
    public final S withCompression(final String codecName)
    {
        return build(channel, callOptions.withCompression(codecName));
    }

    /**
     * @param options replacement options.
     * @return a stub with these options.
     */
    public final S withCallOptions(final CallOptions options)
    {
        return build(channel, options);
    }
}
