package io.reverb.grpc;

import io.grpc.EquivalentAddressGroup;
import io.grpc.NameResolver;
import io.grpc.NameResolverProvider;

import java.net.SocketAddress;
import java.net.URI;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.List;

/**
 * grpc-java's name resolver for a fixed list of Reverb addresses, the {@code static:} scheme of one
 * {@link ReverbChannelBuilder} (registered in that builder's own {@link io.grpc.NameResolverRegistry}, never in
 * grpc-java's global one): every resolution gives the same address groups, one per address, so grpc-java's load
 * balancing ({@code pick_first}, {@code round_robin}) sees one subchannel per Reverb server.
 */
final class AddressListResolverProvider extends NameResolverProvider
{
    /** The scheme, as in a native Reverb channel's target {@code static:shm://a,tcp://host:7000}. */
    static final String SCHEME = "static";

    private final List<EquivalentAddressGroup> groups;
    private final String authority;

    /**
     * @param addresses the Reverb addresses, at least one, already checked.
     * @param authority the channel's authority.
     */
    AddressListResolverProvider(final List<ReverbAddress> addresses, final String authority)
    {
        final List<EquivalentAddressGroup> list = new ArrayList<>(addresses.size());
        for (final ReverbAddress address : addresses)
        {
            list.add(new EquivalentAddressGroup(address));
        }
        this.groups = Collections.unmodifiableList(list);
        this.authority = authority;
    }

    @Override
    protected boolean isAvailable()
    {
        return true;
    }

    @Override
    protected int priority()
    {
        return 5;
    }

    @Override
    public String getDefaultScheme()
    {
        return SCHEME;
    }

    @Override
    public Collection<Class<? extends SocketAddress>> getProducedSocketAddressTypes()
    {
        return Collections.singleton(ReverbAddress.class);
    }

    @Override
    public NameResolver newNameResolver(final URI targetUri, final NameResolver.Args args)
    {
        // the target only names the list for grpc-java (logs, channelz); the list itself is this provider's
        return SCHEME.equals(targetUri.getScheme()) ? new Resolver() : null;
    }

    /** @return a resolver of this provider's list, whatever the target (for {@link ReverbNameResolverProvider}). */
    NameResolver resolver()
    {
        return new Resolver();
    }

    /** Gives the fixed list when started and again on every refresh (grpc-java asks after a subchannel failed). */
    private final class Resolver extends NameResolver
    {
        private Listener2 listener;

        @Override
        public String getServiceAuthority()
        {
            return authority;
        }

        @Override
        public void start(final Listener2 resolved)
        {
            this.listener = resolved;
            resolve();
        }

        @Override
        public void refresh()
        {
            resolve();
        }

        private void resolve()
        {
            // start and refresh run in the channel's synchronization context, where onResult2 is to be called
            if (listener != null)
            {
                listener.onResult2(ResolutionResult.newBuilder().setAddresses(groups).build());
            }
        }

        @Override
        public void shutdown()
        {
            listener = null;
        }
    }
}
