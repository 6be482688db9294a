package io.reverb.rdma.verbs;

import java.io.IOException;

/**
 * ibv_pd. Registered memory is allocated <em>through</em> the protection domain so that each
 * provider decides where it lives (a registered direct buffer for DiSNi, a mapped file for shm)
 * and can honour one-sided semantics.
 */
public interface ProtectionDomain extends AutoCloseable
{
    /** @return the context this PD belongs to. */
    VerbsContext context();

    /**
     * Allocates and registers {@code length} bytes, zero-filled (ibv_reg_mr on fresh memory).
     *
     * @param length bytes, &gt; 0.
     * @param access bit set of {@link Access} flags.
     * @return the registered region.
     * @throws IOException if memory cannot be allocated or registered.
     */
    MemoryRegion allocate(int length, int access) throws IOException;

    /** Deregisters every region of this PD and frees it. Idempotent. */
    @Override
    void close();
}
