/**
 * rpc-core's transport SPI over the connection engine: {@code shm://name} through
 * {@link io.reverb.rdma.rpc.ShmTransportProvider}, registered with {@link java.util.ServiceLoader}.
 * Claims are written straight into registered memory (the engine takes rpc-core's claim object itself and commits
 * it); inbound messages are views of receive slots
 * or rendezvous buffers, valid during the callback.
 */
package io.reverb.rdma.rpc;
