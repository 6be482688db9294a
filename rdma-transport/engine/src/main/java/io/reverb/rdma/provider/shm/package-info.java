/**
 * The {@code shm://} verbs provider: an RDMA fabric between threads and processes of one host.
 *
 * <p>Everything a NIC would reach lives in memory-mapped files in one directory
 * ({@link io.reverb.rdma.verbs.VerbsConfig#shmDirectory()}, default {@code /dev/shm/reverb-<user>}, which
 * must be owned by this process's user with mode 0700: checked, refused otherwise):
 * registered regions (a header with keys, PD and access, then the data), each QP's posted receive
 * queue ({@code RecvRing}) and each completion queue ({@code CqRing}). A QP executes its work
 * requests inside {@code postSend} on the caller's thread, playing both NICs: it maps the peer's
 * files, checks the peer's region headers and copies; the peer's CPU does nothing. Connection
 * management, doorbells for armed CQs and disconnect detection (EOF) use one Unix domain socket per
 * connection, watched by a thread per context; a completion channel's waiter also watches its QPs' sockets in a
 * selector of its own, so that a doorbell wakes a sleeping poller directly (one wake-up; see
 * {@code ShmCompletionChannel}, {@code -Dreverb.shm.pollerDoorbells=false} to leave it to the context's thread).
 *
 * <p>Trust boundary: processes of one user. Both ends check each other's credentials on the socket
 * ({@code SO_PEERCRED}); any process of that user can read the shared memory, token or not (see the
 * module README). File names carry 64 random bits, and liveness is an advisory lock held by the owner,
 * so containers sharing {@code /dev/shm} in separate PID namespaces cannot collide or delete each
 * other's live files. Closing unmaps at once.
 *
 * <p>Measure with {@code io.reverb.bench.pingpong.ShmPingPong} (benchmarks module).
 */
package io.reverb.rdma.provider.shm;
