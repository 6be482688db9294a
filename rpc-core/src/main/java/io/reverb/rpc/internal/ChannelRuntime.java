package io.reverb.rpc.internal;

import io.reverb.rpc.CallOptions;
import io.reverb.rpc.MethodDescriptor;
import io.reverb.rpc.RpcChannel;
import org.reactivestreams.Publisher;
import reactor.core.publisher.Flux;

/**
 * Placeholder: the channel runtime is being built.
 */
public final class ChannelRuntime
{
    private final RpcChannel.Builder config;

    public ChannelRuntime(final RpcChannel.Builder config)
    {
        this.config = config;
    }

    public <Req, Resp> Flux<Resp> newCall(
        final MethodDescriptor<Req, Resp> method, final CallOptions options, final Publisher<Req> requests)
    {
        return Flux.error(new UnsupportedOperationException("channel runtime not yet implemented"));
    }

    public String uri()
    {
        return config.uri;
    }

    public void close()
    {
    }

    public boolean isClosed()
    {
        return false;
    }
}
