package io.reverb.rdma.verbs;

import java.nio.ByteBuffer;
import org.agrona.concurrent.UnsafeBuffer;

/**
 * ibv_mr: a registered region. {@link #address()} is the address peers use in RDMA WRITE/READ and
 * the address local scatter-gather entries use; it is provider-defined (a virtual address for
 * DiSNi) and only meaningful together with {@link #lkey()}/{@link #rkey()}.
 */
public interface MemoryRegion extends AutoCloseable
{
    /** @return the PD the region belongs to. */
    ProtectionDomain pd();

    /** @return the region's start address, as used in SGEs and remote requests. */
    long address();

    /** @return length in bytes. */
    int length();

    /** @return local key, for SGEs. */
    int lkey();

    /** @return remote key, for peers' one-sided access. */
    int rkey();

    /** @return {@link Access} flags it was registered with. */
    int access();

    /** @return a direct buffer view of the whole region (position 0, limit length); share-safe only with duplicate(). */
    ByteBuffer byteBuffer();

    /** @return an Agrona view of the whole region, index 0 = {@link #address()}. */
    UnsafeBuffer buffer();

    /** @return false once deregistered. */
    boolean isRegistered();

    /** ibv_dereg_mr and free. Later remote access with its rkey fails with REM_ACCESS_ERR. Idempotent. */
    @Override
    void close();
}
