/**
 * The few types shared by rpc-core and the transports built on it, in a module with no dependencies so that the
 * engine (which knows nothing of RPC) does not pull Reactor or protobuf onto its class path:
 * {@link io.reverb.common.WriteClaim} and {@link io.reverb.common.ClaimResult}, the zero-copy write contract
 * between an RPC layer and a transport connection, and {@link io.reverb.common.LogLimiter}, the one rate limit on
 * log lines that a peer can cause. The process's live counters file is in {@link io.reverb.common.counters}.
 */
package io.reverb.common;
