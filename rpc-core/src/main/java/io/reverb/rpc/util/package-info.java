/**
 * Small helpers shared by rpc-core and the transports built on it (rdma-transport's verbs providers and engine):
 * {@link io.reverb.rpc.util.LogLimiter}, the one rate limit on log lines that a peer can cause.
 * Nothing here depends on the rest of rpc-core.
 */
package io.reverb.rpc.util;
