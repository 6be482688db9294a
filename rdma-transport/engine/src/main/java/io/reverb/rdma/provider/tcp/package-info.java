/**
 * The {@code tcp://} verbs provider: software RDMA over TCP, in the spirit of SoftiWARP, for hosts
 * without an RDMA NIC (or between network namespaces).
 *
 * <p>Each context runs one "NIC" thread ({@link io.reverb.rdma.provider.tcp.TcpNic}) with an NIO
 * selector; each queue pair is one TCP socket. Registered memory is direct memory allocated by the
 * protection domain. A posting thread writes its request to the socket itself when no other thread is
 * at work on that QP, else the NIC thread does; requests are framed
 * ({@link io.reverb.rdma.provider.tcp.TcpFrame}) and large payloads go from registered memory to the socket and
 * from the socket into registered memory without a copy. On the target side the NIC thread checks rkey, bounds,
 * access and PD before placing data, places SEND data into the next posted receive, answers every
 * request in order, and produces completions into lock-free multi-producer CQs. While a receive CQ's poller keeps
 * polling, it reads its QPs' sockets itself and does all of that on its own thread (no hand-over between threads
 * per message); when it arms the CQ to sleep, the NIC thread reads again
 * ({@link io.reverb.rdma.provider.tcp.TcpCompletionQueue}; on by default; {@code VerbsConfig.withTcpPollerReads(false)},
 * default {@code -Dreverb.tcp.pollerReads}, leaves all reading to the NIC thread). The semantics
 * (errors, RNR, flush on disconnect) are those of the shm provider, pinned by the conformance suite;
 * see {@link io.reverb.rdma.provider.tcp.TcpQueuePair} for the details.
 *
 * <p>Addresses are {@code host:port}; port 0 listens on a free port, which
 * {@link io.reverb.rdma.verbs.ConnectionListener#localAddress()} reports. Measure with
 * {@code io.reverb.bench.pingpong.TcpPingPong} (benchmarks module).
 *
 * <p>Known limits: a send buffer is read when its request is written to the socket, possibly after
 * {@code postSend} returned (as with a real NIC: reuse it after its completion); a send completion can come up to
 * about 2 ms after the peer received the request when the peer holds its ACK for a request that does not come
 * ({@code VerbsConfig.withTcpAckHoldNanos(0)}, default {@code -Dreverb.tcp.ackHoldMicros}, sends every ACK at once);
 * a spinning poller reads each socket it holds with one
 * system call per poll, so one serving many connections makes that many calls per duty cycle until idle sockets go
 * back to the NIC thread (after 1,024 empty reads); a peer that
 * vanishes without FIN or RST is noticed only when TCP gives up on it; without TLS nothing is
 * encrypted or authenticated below the engine's handshake, so, as with RDMA, anyone who can connect and
 * learns an rkey of that connection's PD can reach that memory.
 *
 * <p>TLS ({@link io.reverb.rdma.verbs.VerbsConfig#tls()}): every QP's bytes go through a
 * {@link io.reverb.rdma.provider.tcp.TcpLink}; with TLS that is a
 * {@link io.reverb.rdma.provider.tcp.TlsTcpStream} (JDK {@code SSLEngine}), which carries the connection
 * handshake too. Listeners drive TLS handshakes on their non-blocking handshake thread, against the handshake
 * deadline.
 */
package io.reverb.rdma.provider.tcp;
