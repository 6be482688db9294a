package io.reverb.grpc;

import io.grpc.ChannelCredentials;
import io.grpc.ChoiceChannelCredentials;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ManagedChannelBuilder;
import io.grpc.ManagedChannelProvider;
import java.net.SocketAddress;
import java.util.Collection;
import java.util.Collections;

/**
 * reverb-grpc as a grpc-java channel provider (found by {@link java.util.ServiceLoader}), so that grpc-java code that
 * makes its channels with {@code Grpc.newChannelBuilder(target, credentials)} reaches a Reverb server by its address
 * alone:
 *
 * <pre>{@code
 * ManagedChannel channel = Grpc.newChannelBuilder("shm://greeter", InsecureChannelCredentials.create()).build();
 * }</pre>
 *
 * The builder is a {@link ReverbChannelBuilder}. grpc-java asks this provider only for targets that
 * {@link ReverbNameResolverProvider} resolves ({@code shm://}, {@code tcp://}, {@code rdma://}, {@code reverb://},
 * {@code inproc://}), whose addresses only Reverb reaches; every other target stays with Netty or OkHttp. Reverb's TLS
 * and auth token are engine settings, not grpc-java credentials: credentials other than insecure ones are refused with
 * an error that says where to set them, rather than dialling without the TLS asked for.
 *
 * <p>Priority 1, below Netty's (5): {@code ManagedChannelBuilder.forTarget} and {@code forAddress}, which take the
 * provider of highest priority whatever the target, stay Netty's where Netty is on the class path. Where no other
 * provider is, they come here, and a target that is not a Reverb address fails with an error that says so.
 */
public final class ReverbChannelProvider extends ManagedChannelProvider
{
    private static final String CREDENTIALS = "Reverb takes no grpc-java channel credentials but insecure ones: its " +
        "TLS and auth token are engine settings (ReverbChannelBuilder.forTarget(target).reverbChannel(b -> " +
        "b.transportOptions(EngineOptions.of(new EngineConfig().tls(...)))))";

    @Override
    protected boolean isAvailable()
    {
        return true;
    }

    @Override
    protected int priority()
    {
        return 1;
    }

    /**
     * @throws UnsupportedOperationException always: a Reverb address is a URI ({@link #builderForTarget}).
     */
    @Override
    protected ManagedChannelBuilder<?> builderForAddress(final String name, final int port)
    {
        throw new UnsupportedOperationException("reverb-grpc has no channels to a bare host and port (" + name + ":" +
            port + "): use a Reverb address such as tcp://" + name + ":" + port + " or add grpc-netty for HTTP/2");
    }

    /**
     * @param target a Reverb address.
     * @return a {@link ReverbChannelBuilder} for it.
     * @throws IllegalArgumentException if target is not a Reverb address.
     */
    @Override
    protected ManagedChannelBuilder<?> builderForTarget(final String target)
    {
        if (!ReverbChannelBuilder.isReverbAddress(target))
        {
            throw new IllegalArgumentException("'" + target + "' is not a Reverb address (shm://, tcp://, rdma://, " +
                "reverb://, inproc://); reverb-grpc is the only grpc-java channel provider on the class path");
        }
        return ReverbChannelBuilder.forTarget(target);
    }

    @Override
    protected NewChannelBuilderResult newChannelBuilder(final String target, final ChannelCredentials credentials)
    {
        if (!ReverbChannelBuilder.isReverbAddress(target))
        {
            return NewChannelBuilderResult.error("not a Reverb address: " + target);
        }
        if (!insecure(credentials))
        {
            return NewChannelBuilderResult.error(CREDENTIALS);
        }
        return NewChannelBuilderResult.channelBuilder(ReverbChannelBuilder.forTarget(target));
    }

    @Override
    protected Collection<Class<? extends SocketAddress>> getSupportedSocketAddressTypes()
    {
        return Collections.singleton(ReverbAddress.class);
    }

    private static boolean insecure(final ChannelCredentials credentials)
    {
        if (credentials instanceof InsecureChannelCredentials)
        {
            return true;
        }
        if (credentials instanceof ChoiceChannelCredentials)
        {
            for (final ChannelCredentials choice : ((ChoiceChannelCredentials)credentials).getCredentialsList())
            {
                if (insecure(choice))
                {
                    return true;
                }
            }
        }
        return false;
    }
}
