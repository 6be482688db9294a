package io.reverb.rpc.lb;

import io.reverb.rpc.ConnectivityState;
import io.reverb.rpc.Status;
import java.net.URI;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * Base of the policies that spread calls over every ready subchannel ({@code round_robin}, {@code peak_ewma}):
 * one subchannel per address, all connected eagerly, reconnected after a graceful close, and a new picker over the
 * ready ones at each change. Subclasses only say how to pick among them.
 */
public abstract class ReadyListLoadBalancer implements LoadBalancer
{
    private final Helper helper;
    private final Map<URI, Subchannel> subchannels = new LinkedHashMap<>();
    private final SubchannelStateListener listener = this::onStateChange;
    private Status lastError = Status.UNAVAILABLE.withDescription("no address resolved yet");
    private ConnectivityState published;
    private Subchannel[] publishedReady = new Subchannel[0];
    private boolean shutdown;

    /**
     * @param helper the channel's side.
     */
    protected ReadyListLoadBalancer(final Helper helper)
    {
        this.helper = Objects.requireNonNull(helper, "helper");
    }

    /**
     * @param ready the ready subchannels in address order, not empty; owned by the picker.
     * @return a picker over them.
     */
    protected abstract Picker newReadyPicker(Subchannel[] ready);

    @Override
    public void handleResolvedAddresses(final List<URI> addresses)
    {
        if (shutdown)
        {
            return;
        }
        final Map<URI, Subchannel> kept = new LinkedHashMap<>();
        for (final URI address : addresses)
        {
            if (kept.containsKey(address))
            {
                continue;
            }
            Subchannel subchannel = subchannels.remove(address);
            if (subchannel == null)
            {
                subchannel = helper.createSubchannel(address, listener);
                subchannel.requestConnection();
            }
            kept.put(address, subchannel);
        }
        // what is left was dropped by the resolver: no new calls, running ones finish
        for (final Subchannel gone : subchannels.values())
        {
            gone.shutdown();
        }
        subchannels.clear();
        subchannels.putAll(kept);
        if (addresses.isEmpty())
        {
            lastError = Status.UNAVAILABLE.withDescription("the name resolver returned no address");
        }
        update();
    }

    @Override
    public void handleNameResolutionError(final Status error)
    {
        lastError = error;
        update();
    }

    @Override
    public void shutdown()
    {
        shutdown = true;
        for (final Subchannel subchannel : subchannels.values())
        {
            subchannel.shutdown();
        }
        subchannels.clear();
    }

    /**
     * @return the subchannels now, in address order (for tests and diagnostics).
     */
    public List<Subchannel> subchannels()
    {
        return List.copyOf(subchannels.values());
    }

    private void onStateChange(final Subchannel subchannel, final ConnectivityState state)
    {
        if (shutdown || subchannels.get(subchannel.address()) != subchannel)
        {
            return; // a subchannel already dropped
        }
        if (state == ConnectivityState.IDLE)
        {
            // closed gracefully (GOAWAY, max connection age): make a new connection, the server may still serve
            subchannel.requestConnection();
        }
        else if (state == ConnectivityState.TRANSIENT_FAILURE)
        {
            lastError = Pickers.unreachable(subchannel);
            helper.refreshNameResolution();
        }
        update();
    }

    private void update()
    {
        final List<Subchannel> ready = new ArrayList<>(subchannels.size());
        boolean connecting = false;
        for (final Subchannel subchannel : subchannels.values())
        {
            final ConnectivityState state = subchannel.state();
            if (state == ConnectivityState.READY)
            {
                ready.add(subchannel);
            }
            else if (state == ConnectivityState.CONNECTING || state == ConnectivityState.IDLE)
            {
                connecting = true;
            }
        }
        if (!ready.isEmpty())
        {
            final Subchannel[] array = ready.toArray(new Subchannel[0]);
            if (published == ConnectivityState.READY && Arrays.equals(array, publishedReady))
            {
                return; // same set: keep the picker (and round robin's position)
            }
            publish(ConnectivityState.READY, array, newReadyPicker(array));
        }
        else
        {
            final ConnectivityState state = connecting ? ConnectivityState.CONNECTING : ConnectivityState.TRANSIENT_FAILURE;
            publish(state, new Subchannel[0], Pickers.none(lastError));
        }
    }

    private void publish(final ConnectivityState state, final Subchannel[] ready, final Picker picker)
    {
        published = state;
        publishedReady = ready;
        helper.updateBalancingState(state, picker);
    }
}
