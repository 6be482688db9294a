package io.reverb.rpc.lb;

/**
 * {@code peak_ewma}: the latency-aware policy. Connects to every address; per call, takes the ready subchannel
 * whose {@link SubchannelLoad#cost(long) cost} (peak-sensitive latency average times calls outstanding plus one) is
 * lowest: of all of them when there are at most four, else of two drawn at random (power of two choices). A slow or
 * overloaded replica is avoided from its first slow answer, yet still probed now and then as its average decays, so
 * it is used again once it recovers.
 */
public final class PeakEwmaLoadBalancer extends ReadyListLoadBalancer
{
    /**
     * @param helper the channel's side.
     */
    public PeakEwmaLoadBalancer(final Helper helper)
    {
        super(helper);
    }

    @Override
    protected Picker newReadyPicker(final Subchannel[] ready)
    {
        return Pickers.peakEwma(ready);
    }
}
