package io.reverb.rpc.lb;

import io.reverb.rpc.ConnectivityState;
import io.reverb.rpc.Status;
import java.net.URI;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * {@code pick_first} (the default, as in gRPC): connects to the addresses one at a time, in the resolver's order,
 * and sends every call to the first that becomes ready. It sticks to that one while it stays ready; when it
 * fails or is drained, the next ready subchannel takes over, or the next address in order is tried.
 */
public final class PickFirstLoadBalancer implements LoadBalancer
{
    private final Helper helper;
    private final SubchannelStateListener listener = this::onStateChange;
    private final List<Subchannel> subchannels = new ArrayList<>();
    private Subchannel selected;
    private int attempt;
    private Status lastError = Status.UNAVAILABLE.withDescription("no address resolved yet");
    private boolean shutdown;

    /**
     * @param helper the channel's side.
     */
    public PickFirstLoadBalancer(final Helper helper)
    {
        this.helper = Objects.requireNonNull(helper, "helper");
    }

    @Override
    public void handleResolvedAddresses(final List<URI> addresses)
    {
        if (shutdown)
        {
            return;
        }
        final Map<URI, Subchannel> old = new LinkedHashMap<>();
        for (final Subchannel subchannel : subchannels)
        {
            old.put(subchannel.address(), subchannel);
        }
        subchannels.clear();
        for (final URI address : addresses)
        {
            Subchannel subchannel = old.remove(address);
            if (subchannel == null && !containsAddress(address))
            {
                subchannel = helper.createSubchannel(address, listener);
            }
            if (subchannel != null)
            {
                subchannels.add(subchannel);
            }
        }
        for (final Subchannel gone : old.values())
        {
            gone.shutdown();
        }
        if (selected != null && !subchannels.contains(selected))
        {
            selected = null;
        }
        if (addresses.isEmpty())
        {
            lastError = Status.UNAVAILABLE.withDescription("the name resolver returned no address");
        }
        attempt = 0;
        update();
    }

    @Override
    public void handleNameResolutionError(final Status error)
    {
        lastError = error;
        if (selected == null)
        {
            update();
        }
    }

    @Override
    public void shutdown()
    {
        shutdown = true;
        for (final Subchannel subchannel : subchannels)
        {
            subchannel.shutdown();
        }
        subchannels.clear();
        selected = null;
    }

    /**
     * @return the subchannel calls go to, or null.
     */
    public Subchannel selected()
    {
        return selected;
    }

    private boolean containsAddress(final URI address)
    {
        for (final Subchannel subchannel : subchannels)
        {
            if (subchannel.address().equals(address))
            {
                return true;
            }
        }
        return false;
    }

    private void onStateChange(final Subchannel subchannel, final ConnectivityState state)
    {
        final int index = subchannels.indexOf(subchannel);
        if (shutdown || index < 0)
        {
            return;
        }
        if (subchannel == selected && state != ConnectivityState.READY)
        {
            selected = null;
            attempt = (index + 1) % subchannels.size();
        }
        if (state == ConnectivityState.TRANSIENT_FAILURE)
        {
            lastError = Pickers.unreachable(subchannel);
            helper.refreshNameResolution();
            if (index == attempt)
            {
                attempt = (index + 1) % subchannels.size();
            }
        }
        update();
    }

    private void update()
    {
        if (selected == null)
        {
            // the first ready one in address order, if any became ready meanwhile
            for (final Subchannel subchannel : subchannels)
            {
                if (subchannel.state() == ConnectivityState.READY)
                {
                    selected = subchannel;
                    break;
                }
            }
        }
        if (selected != null)
        {
            helper.updateBalancingState(ConnectivityState.READY, Pickers.fixed(selected));
            return;
        }
        if (subchannels.isEmpty())
        {
            helper.updateBalancingState(ConnectivityState.TRANSIENT_FAILURE, Pickers.none(lastError));
            return;
        }
        final Subchannel next = subchannels.get(attempt % subchannels.size());
        next.requestConnection();
        boolean anyConnecting = false;
        for (final Subchannel subchannel : subchannels)
        {
            final ConnectivityState state = subchannel.state();
            anyConnecting |= state == ConnectivityState.CONNECTING || state == ConnectivityState.IDLE;
        }
        helper.updateBalancingState(
            anyConnecting ? ConnectivityState.CONNECTING : ConnectivityState.TRANSIENT_FAILURE, Pickers.none(lastError));
    }
}
