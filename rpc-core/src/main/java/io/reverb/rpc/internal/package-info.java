/**
 * The call runtime, not API. One name per layer, client side: a subchannel's {@code SubchannelConnector} (connects,
 * reconnects with backoff, keeps the calls that wait, transparent retry) over one {@code ClientTransportImpl} per
 * connection (the stream SPI's {@code ClientTransport} and the published {@code RpcClientConnection}: one connect
 * attempt, no reconnect), which speaks the wire protocol through a {@code ClientWireConnection}, one
 * {@code ClientCall} (a stream) per call; {@code ClientCallStarter} is what the connector and the transport share (the
 * Reactor calls, interceptors, deadline, timers, metrics). Server side: {@code ServerRuntime} (the server) over one
 * {@code ServerWireConnection} per accepted connection (its transport), one {@code ServerCall} per stream. Both
 * connection sides extend {@code WireConnection}, the part of the wire protocol they share. It knows nothing of load
 * balancing ({@code lb}) or name resolution.
 */
package io.reverb.rpc.internal;
