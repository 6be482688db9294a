package io.reverb.rpc.lb;

/**
 * The providers of the built-in policies, registered in {@code META-INF/services}.
 */
public final class BuiltInLoadBalancerProviders
{
    private BuiltInLoadBalancerProviders()
    {
    }

    /** {@code pick_first}. */
    public static final class PickFirst implements LoadBalancerProvider
    {
        @Override
        public String policyName()
        {
            return "pick_first";
        }

        @Override
        public LoadBalancer newLoadBalancer(final LoadBalancer.Helper helper)
        {
            return new PickFirstLoadBalancer(helper);
        }
    }

    /** {@code round_robin}. */
    public static final class RoundRobin implements LoadBalancerProvider
    {
        @Override
        public String policyName()
        {
            return "round_robin";
        }

        @Override
        public LoadBalancer newLoadBalancer(final LoadBalancer.Helper helper)
        {
            return new RoundRobinLoadBalancer(helper);
        }
    }

    /** {@code peak_ewma}. */
    public static final class PeakEwma implements LoadBalancerProvider
    {
        @Override
        public String policyName()
        {
            return "peak_ewma";
        }

        @Override
        public LoadBalancer newLoadBalancer(final LoadBalancer.Helper helper)
        {
            return new PeakEwmaLoadBalancer(helper);
        }
    }
}
