/**
 * The connection engine: moves framed messages between two endpoints over any verbs provider
 * ({@code shm}, {@code tcp}, {@code disni}); it knows nothing of RPC.
 *
 * <h2>Pieces</h2>
 * <ul>
 *   <li>{@link io.reverb.rdma.engine.RdmaEngine}: one verbs context, a group of completion
 *       {@code Poller}s (Agrona agents run by an {@code AgentRunner} with {@code PollerIdleStrategy}),
 *       listeners and connections; configured by {@link io.reverb.rdma.engine.EngineConfig}.</li>
 *   <li>{@link io.reverb.rdma.engine.Connection}: claim/commit sending (Aeron-style return codes),
 *       a {@link io.reverb.rdma.engine.MessageHandler} for receiving on the poller thread, close
 *       and failure callbacks, introspection for leak checks.</li>
 *   <li>Handshake in rdma_cm private data ({@code Handshake}): version, ring geometry, limits,
 *       token digest; a one-sided "ready" write so no SEND ever meets an unposted receive.</li>
 *   <li>A connection ({@code EngineConnection}: lifecycle and close) is split by direction:
 *       {@code ConnectionSender} (the {@code SendRing}, {@code CreditWindow}, {@code ControlQueue},
 *       {@code OutboundRendezvous}) and {@code ReceiveSlots} (with {@code InboundRendezvous}).</li>
 *   <li>Eager path: receive slots and a registered send ring; committed frames are coalesced into
 *       one SEND per batch (layout in {@code Wire} and the {@code *Flyweight}s); credits piggyback on
 *       every batch.</li>
 *   <li>Rendezvous: RTS, CTS, RDMA_WRITE_WITH_IMM from per-connection, size-classed, bounded
 *       {@code BufferPool}s; one protection domain per connection.</li>
 * </ul>
 *
 * <h2>Threads</h2>
 * Producers post their own SENDs when credits allow; pollers process completions, deliver
 * messages, answer rendezvous and post what waited for credits. Nothing on the per-message path
 * allocates.
 */
package io.reverb.rdma.engine;
