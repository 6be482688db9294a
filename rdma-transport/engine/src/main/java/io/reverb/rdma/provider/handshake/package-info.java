/**
 * The accepting side of the socket-based providers' connection management ({@code shm://} over a Unix domain
 * socket, {@code tcp://} over TCP or TLS): {@link io.reverb.rdma.provider.handshake.ListenerHandshakes} reads every
 * pending handshake at once on one selector, each against its own deadline and within a bound on how many wait, so
 * that no peer can hold the listener up; {@link io.reverb.rdma.provider.handshake.HandshakeStream} is the socket, or
 * a TLS session over it, that a handshake is read through.
 *
 * <p>Provider implementation, not SPI (it used to sit in {@code io.reverb.rdma.verbs}).
 */
package io.reverb.rdma.provider.handshake;
