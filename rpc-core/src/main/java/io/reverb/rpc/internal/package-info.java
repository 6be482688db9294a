/**
 * The call runtime, not API: connections ({@code RpcConnection}, client and server sides), one state machine per
 * call and side ({@code ClientCall}, {@code ServerCall}), the channel's connection management and the server's
 * lifecycle.
 */
package io.reverb.rpc.internal;
