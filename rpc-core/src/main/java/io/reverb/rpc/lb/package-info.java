/**
 * Load balancing, on in every channel: the {@link io.reverb.rpc.lb.LoadBalancer} a policy implements, the
 * {@link io.reverb.rpc.lb.Subchannel}s it creates (one connection each), the {@link io.reverb.rpc.lb.Picker} it
 * publishes, which picks a subchannel per call without allocating, and {@link io.reverb.rpc.lb.BalancedChannel}, the
 * implementation of {@link io.reverb.rpc.RpcChannel} that runs them.
 *
 * <p>Built-in policies (by name, {@link io.reverb.rpc.lb.LoadBalancerRegistry}): {@code pick_first},
 * {@code round_robin} and {@code peak_ewma} (power of two choices over latency times outstanding calls).
 * More are added through {@code META-INF/services/io.reverb.rpc.lb.LoadBalancerProvider}.
 *
 * <p>Threading: a channel calls its load balancer serially (resolver results, subchannel state changes);
 * pickers are called from any thread.
 */
package io.reverb.rpc.lb;
