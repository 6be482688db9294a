/**
 * The connection engine: moves framed messages between two endpoints over any verbs provider
 * ({@code shm}, {@code tcp}, {@code disni}); it knows nothing of RPC.
 *
 * <h2>Pieces</h2>
 * <ul>
 *   <li>{@link io.reverb.rdma.engine.RdmaEngine}: one verbs context, a group of completion
 *       {@code Poller}s (Agrona agents run by an {@code AgentRunner} with {@code PollerIdleStrategy}),
 *       listeners and connections; configured by {@link io.reverb.rdma.engine.EngineConfig}.</li>
 *   <li>{@link io.reverb.rdma.engine.Connection}: claim/commit sending into rpc-core's
 *       {@link io.reverb.common.WriteClaim} (one claim object for the engine and the RPC layer; Aeron-style
 *       return codes, rpc-core's {@link io.reverb.common.ClaimResult} numbers),
 *       a {@link io.reverb.rdma.engine.MessageHandler} for receiving on the poller thread, close
 *       and failure callbacks, introspection for leak checks.</li>
 *   <li>Handshake in rdma_cm private data ({@code Handshake}): version, ring geometry, limits,
 *       nonces and proofs; a one-sided "ready" write so no SEND ever meets an unposted receive.</li>
 *   <li>A connection ({@code EngineConnection}: lifecycle and close) is split by direction:
 *       {@code ConnectionSender} (the {@code SendRing}, {@code CreditWindow}, {@code ControlQueue}, and
 *       {@code RendezvousSender} for claims above the eager limit, with {@code OutboundRendezvous}) and
 *       {@code ReceiveSlots} (with {@code InboundRendezvous}).</li>
 *   <li>Eager path: receive slots and a registered send ring; committed frames are coalesced into
 *       one SEND per batch (layout in {@code Wire} and the {@code *Flyweight}s); credits piggyback on
 *       every batch.</li>
 *   <li>Rendezvous: RTS, CTS, RDMA_WRITE_WITH_IMM from per-connection, size-classed, bounded
 *       {@code BufferPool}s; one protection domain per connection. Where the QP can map the peer's memory (shm),
 *       a direct write instead: RTS at the claim, the claim over the mapped grant once the CTS is in, a zero-length
 *       RDMA_WRITE_WITH_IMM at commit, ABORT at abort ({@link io.reverb.rdma.engine.EngineConfig#directWrite(boolean)},
 *       {@code RendezvousSender}).</li>
 * </ul>
 *
 * <h2>Authentication (with {@link io.reverb.rdma.engine.EngineConfig#authToken(byte[])})</h2>
 * A challenge-response in three messages, so that a captured handshake is useless (layouts in {@code Handshake}):
 * <pre>
 *   connector                                                  acceptor
 *   connect request: parameters, nonce Nc (16 random bytes) ---&gt;
 *                                                              checks version, geometry, limits, that auth is on
 *                      &lt;--- accept: parameters, nonce Na,
 *                           Pa = HMAC-SHA256(token, "RVRB acceptor" | request | accept[0..40))[0..16)
 *   verifies Pa (else refuses, sends nothing)                  (posts receives, writes the ready word)
 *   first batch: control frame AUTH with
 *   Pc = HMAC-SHA256(token, "RVRB connector" | request | accept)[0..16)  ---&gt;
 *                                                              AuthGate: admits the connection only if the
 *                                                              first batch opens with a valid Pc
 * </pre>
 * <ul>
 *   <li>Nothing of the token travels; each proof covers a nonce the verifier chose itself a moment ago and
 *       both sides' parameters (ring geometry, limits, the ready word's address and rkey), so neither a
 *       recorded request, nor a recorded accept, nor a recorded proof is accepted again.</li>
 *   <li>Until admitted, the acceptor has sent nothing (the connector's credits arrive with that same first
 *       batch), delivered nothing, and not passed the connection to the listener's callback. A connector
 *       that proves nothing within {@link io.reverb.rdma.verbs.VerbsConfig#handshakeTimeoutNanos()}, proves
 *       wrongly, or leaves first, is refused: {@link io.reverb.rdma.engine.HandshakeException.Reason#AUTHENTICATION},
 *       one rate-limited line through the error handler, counted by
 *       {@link io.reverb.rdma.engine.EngineListener#refusedCount()}.</li>
 *   <li>The connector refuses an acceptor that cannot prove it holds the token, with the same reason: a
 *       side configured with a token never talks to a peer without it.</li>
 *   <li>Not covered: confidentiality and integrity of what follows the handshake (on {@code tcp://} across
 *       untrusted networks, turn on TLS with {@link io.reverb.rdma.engine.EngineConfig#tls(io.reverb.rdma.verbs.TlsConfig)}; {@code shm://} trusts
 *       the same user on one host), and offline guessing of a weak token
 *       from a recorded handshake (use 128 random bits or more).</li>
 * </ul>
 *
 * <h2>Limits</h2>
 * Every value from a peer is checked before anything is sized from it (receive slots, eager limit and
 * maximum inbound size in the handshake; lengths, credits and ids in batches). A listener refuses
 * connections beyond {@link io.reverb.rdma.engine.EngineConfig#maxConnections()} with a reject that says so.
 *
 * <h2>Threads</h2>
 * Producers post their own SENDs when credits allow; pollers process completions, deliver
 * messages, answer rendezvous and post what waited for credits. Nothing on the per-message path
 * allocates. A connection's send side is guarded by one lock object, its {@code SendLock}, whose
 * javadoc lists what it guards and the lock order (RPC write lock, send lock, send pool, provider QP).
 */
package io.reverb.rdma.engine;
