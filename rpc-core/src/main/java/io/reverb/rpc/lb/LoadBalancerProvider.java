package io.reverb.rpc.lb;

/**
 * A load-balancing policy by name, found by {@link java.util.ServiceLoader}: list implementations in
 * {@code META-INF/services/io.reverb.rpc.lb.LoadBalancerProvider}. Built in: {@code pick_first},
 * {@code round_robin}, {@code peak_ewma}.
 */
public interface LoadBalancerProvider
{
    /**
     * @return the policy's name, e.g. {@code "round_robin"}.
     */
    String policyName();

    /**
     * @return higher wins when several providers have one name.
     */
    default int priority()
    {
        return 5;
    }

    /**
     * @param helper the channel's side.
     * @return a load balancer for one channel.
     */
    LoadBalancer newLoadBalancer(LoadBalancer.Helper helper);
}
