/**
 * Name resolution: a channel's target (a list of transport addresses, {@code dns:///host:port}, or any scheme a
 * {@link io.reverb.rpc.resolver.NameResolverProvider} registers) becomes a list of transport addresses, kept up to
 * date; the channel's load balancer turns them into connections.
 */
package io.reverb.rpc.resolver;
