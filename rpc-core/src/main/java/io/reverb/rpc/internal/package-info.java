/**
 * The call runtime, not API: connections ({@code RpcConnection}, client and server sides), one state machine per
 * call and side ({@code ClientCall}, {@code ServerCall}), the published connection API's implementation
 * ({@code StandaloneConnection}: one connection, no reconnect), a subchannel's connection manager above it
 * ({@code ChannelRuntime}: reconnect with backoff, waiting calls, transparent retry) and the server's lifecycle. It
 * knows nothing of load balancing ({@code lb}) or name resolution.
 */
package io.reverb.rpc.internal;
