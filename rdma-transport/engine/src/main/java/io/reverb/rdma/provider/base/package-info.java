/**
 * What the verbs providers share, below the SPI of {@link io.reverb.rdma.verbs} and above each provider
 * ({@code provider.shm}, {@code provider.tcp}, and {@code provider.disni} in reverb-transport-rdma): the
 * {@code Abstract*} skeletons of protection domain, completion queue, queue pair, memory region and listener,
 * the region and scatter-gather checks every provider makes before it touches memory ({@link
 * io.reverb.rdma.provider.base.RegionChecks}, {@link io.reverb.rdma.provider.base.RegionList}), a completion channel
 * that parks its waiter ({@link io.reverb.rdma.provider.base.ParkingCompletionChannel}) and the task queue of a
 * provider's own thread ({@link io.reverb.rdma.provider.base.Tasks}).
 *
 * <p>Provider implementation, not SPI: the engine is written against {@link io.reverb.rdma.verbs} only and never
 * imports this package.
 */
package io.reverb.rdma.provider.base;
