/**
 * grpc-java over Reverb's transports: {@link io.reverb.grpc.ReverbChannelBuilder} and
 * {@link io.reverb.grpc.ReverbServerBuilder} build grpc-java's own {@code ManagedChannel} and {@code Server} whose
 * streams are Reverb calls (Reverb's wire protocol over rpc-core's transport SPI: shm, tcp, rdma, inproc), so
 * existing grpc-java stubs and services move by changing one builder line, and interoperate with Reverb's native
 * stubs and servers. See docs/MIGRATING.md.
 */
package io.reverb.grpc;
