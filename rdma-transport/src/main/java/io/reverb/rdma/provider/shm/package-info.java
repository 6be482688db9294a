/**
 * The {@code shm://} verbs provider: an RDMA fabric between threads and processes of one host.
 *
 * <p>Everything a NIC would reach lives in memory-mapped files in one directory
 * ({@link io.reverb.rdma.verbs.VerbsConfig#shmDirectory()}, default {@code /dev/shm/reverb}, mode 0700):
 * registered regions (a header with keys, PD and access, then the data), each QP's posted receive
 * queue ({@code RecvRing}) and each completion queue ({@code CqRing}). A QP executes its work
 * requests inside {@code postSend} on the caller's thread, playing both NICs: it maps the peer's
 * files, checks the peer's region headers and copies; the peer's CPU does nothing. Connection
 * management, doorbells for armed CQs and disconnect detection (EOF) use one Unix domain socket per
 * connection, watched by a thread per context.
 *
 * <p>Measure with {@code io.reverb.bench.pingpong.ShmPingPong} (benchmarks module).
 */
package io.reverb.rdma.provider.shm;
