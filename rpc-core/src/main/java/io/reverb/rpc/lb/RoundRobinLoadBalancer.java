package io.reverb.rpc.lb;

import java.util.concurrent.ThreadLocalRandom;

/**
 * {@code round_robin}: connects to every address and takes the ready ones in turn.
 */
public final class RoundRobinLoadBalancer extends ReadyListLoadBalancer
{
    /**
     * @param helper the channel's side.
     */
    public RoundRobinLoadBalancer(final Helper helper)
    {
        super(helper);
    }

    @Override
    protected Picker newReadyPicker(final Subchannel[] ready)
    {
        return Pickers.roundRobin(ready, ThreadLocalRandom.current().nextInt(ready.length));
    }
}
