package io.reverb.rpc.lb;

import io.reverb.rpc.ConnectivityState;
import java.net.URI;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A channel stand-in for load-balancer tests: makes {@link FakeSubchannel}s, records published pickers.
 */
final class FakeHelper implements LoadBalancer.Helper
{
    final Map<URI, FakeSubchannel> created = new LinkedHashMap<>();
    final List<FakeSubchannel> all = new ArrayList<>();
    final long[] clock = {1_000_000_000L};
    ConnectivityState state;
    Picker picker;
    int pickerUpdates;
    int refreshes;

    @Override
    public Subchannel createSubchannel(final URI address, final SubchannelStateListener listener)
    {
        final FakeSubchannel subchannel = new FakeSubchannel(address, listener, new SubchannelLoad(() -> clock[0], 200_000_000L));
        created.put(address, subchannel);
        all.add(subchannel);
        return subchannel;
    }

    @Override
    public void updateBalancingState(final ConnectivityState newState, final Picker newPicker)
    {
        state = newState;
        picker = newPicker;
        pickerUpdates++;
    }

    @Override
    public void refreshNameResolution()
    {
        refreshes++;
    }

    FakeSubchannel get(final String address)
    {
        return created.get(URI.create(address));
    }

    static List<URI> uris(final String... addresses)
    {
        final List<URI> list = new ArrayList<>();
        for (final String address : addresses)
        {
            list.add(URI.create(address));
        }
        return list;
    }

    /** A subchannel whose state the test sets. */
    static final class FakeSubchannel implements Subchannel
    {
        final URI address;
        final SubchannelStateListener listener;
        final SubchannelLoad load;
        ConnectivityState state = ConnectivityState.IDLE;
        int connectionRequests;
        boolean shutdown;

        FakeSubchannel(final URI address, final SubchannelStateListener listener, final SubchannelLoad load)
        {
            this.address = address;
            this.listener = listener;
            this.load = load;
        }

        void set(final ConnectivityState newState)
        {
            state = newState;
            listener.onStateChange(this, newState);
        }

        @Override
        public URI address()
        {
            return address;
        }

        @Override
        public ConnectivityState state()
        {
            return state;
        }

        @Override
        public void requestConnection()
        {
            connectionRequests++;
            if (state == ConnectivityState.IDLE)
            {
                state = ConnectivityState.CONNECTING;
            }
        }

        @Override
        public void shutdown()
        {
            shutdown = true;
            state = ConnectivityState.SHUTDOWN;
        }

        @Override
        public SubchannelLoad load()
        {
            return load;
        }

        @Override
        public String toString()
        {
            return address.toString();
        }
    }
}
