/**
 * The {@code tcp://} verbs provider: software RDMA over TCP, in the spirit of SoftiWARP, for hosts
 * without an RDMA NIC (or between network namespaces).
 *
 * <p>Each context runs one "NIC" thread ({@link io.reverb.rdma.provider.tcp.TcpNic}) with an NIO
 * selector; each queue pair is one TCP socket. Registered memory is direct memory allocated by the
 * protection domain. Posting threads only fill the QP's rings; the NIC thread frames requests
 * ({@link io.reverb.rdma.provider.tcp.TcpFrame}), and on the target side checks rkey, bounds,
 * access and PD before placing data, places SEND data into the next posted receive, answers every
 * request in order, and produces completions into lock-free multi-producer CQs. The semantics
 * (errors, RNR, flush on disconnect) are those of the shm provider, pinned by the conformance suite;
 * see {@link io.reverb.rdma.provider.tcp.TcpQueuePair} for the details.
 */
package io.reverb.rdma.provider.tcp;
