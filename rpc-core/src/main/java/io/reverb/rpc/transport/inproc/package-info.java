/**
 * The {@code inproc://} transport, for tests: see {@link io.reverb.rpc.transport.inproc.InprocTransportProvider}.
 */
package io.reverb.rpc.transport.inproc;
