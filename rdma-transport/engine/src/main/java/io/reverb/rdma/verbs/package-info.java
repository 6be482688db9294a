/**
 * The verbs SPI: a thin, allocation-free model of ibverbs and rdma_cm, shaped so that it maps
 * one-to-one onto DiSNi ({@code RdmaCmId}, {@code IbvPd}, {@code IbvMr}, {@code IbvCQ},
 * {@code IbvCompChannel}, {@code IbvQP}, {@code IbvSendWR}, {@code IbvWC}).
 *
 * <p>Every fabric Reverb runs on implements it: {@code shm} (same host, across processes),
 * {@code tcp} (software RDMA over TCP) and {@code disni} (InfiniBand, RoCE, Soft-RoCE; not iWARP). The
 * connection engine is written against this package only.
 *
 * <h2>Object model</h2>
 * <pre>
 *   VerbsProvider --open--&gt; VerbsContext --allocPd--&gt; ProtectionDomain --allocate--&gt; MemoryRegion
 *                                 |--createCompletionChannel--&gt; CompletionChannel
 *                                 |--createCq--&gt; CompletionQueue (optionally bound to a channel)
 *                                 |--listen--&gt; ConnectionListener --accept--&gt; ConnectionRequest --accept--&gt; QueuePair
 *                                 `--connect--&gt; QueuePair
 * </pre>
 *
 * <h2>Hot-path rules</h2>
 * {@link io.reverb.rdma.verbs.SendRequest}, {@link io.reverb.rdma.verbs.RecvRequest} and
 * {@link io.reverb.rdma.verbs.WorkCompletions} are reusable flyweights; posting and polling
 * return codes and allocate nothing. Exceptions are reserved for set-up and tear-down.
 */
package io.reverb.rdma.verbs;
