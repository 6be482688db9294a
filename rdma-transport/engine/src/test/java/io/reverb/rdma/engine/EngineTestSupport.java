package io.reverb.rdma.engine;

import static org.assertj.core.api.Assertions.assertThat;

import io.reverb.rdma.verbs.VerbsConfig;
import io.reverb.common.WriteClaim;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;
import org.agrona.DirectBuffer;
import org.agrona.MutableDirectBuffer;
import org.agrona.concurrent.UnsafeBuffer;

/**
 * Shared helpers: engine config for a fabric with RNR retries off (so any credit violation surfaces at once
 * as an RNR_RETRY_EXC_ERR completion instead of being hidden by a retry), polling helpers, content patterns.
 */
final class EngineTestSupport
{
    static final long TIMEOUT_MS = 60_000;
    private static final AtomicLong NAMES = new AtomicLong();

    private EngineTestSupport()
    {
    }

    static Path shmDirectory()
    {
        return Paths.get(System.getProperty("reverb.test.shm.dir", "/dev/shm/reverb-engine-test"));
    }

    static VerbsConfig verbsConfig()
    {
        return EngineFabric.SHM.verbsConfig();
    }

    /** The test configuration over shm. */
    static EngineConfig config(final PollingMode mode)
    {
        return config(EngineFabric.SHM, mode);
    }

    /** The test configuration (small rings, 1 KiB eager limit, 8 MiB messages) over a fabric. */
    static EngineConfig config(final EngineFabric fabric, final PollingMode mode)
    {
        return new EngineConfig()
            .verbsConfig(fabric.verbsConfig())
            .pollingMode(mode)
            .receiveSlots(16)
            .sendSlots(16)
            .eagerLimit(1024)
            .maxInboundMessageSize(8 * 1024 * 1024)
            .maxOutboundMessageSize(8 * 1024 * 1024)
            .rendezvousPoolBytes(32L * 1024 * 1024)
            .closeTimeoutNanos(TimeUnit.SECONDS.toNanos(20));
    }

    static String uniqueName(final String prefix)
    {
        return prefix + "-" + ProcessHandle.current().pid() + "-" + NAMES.incrementAndGet();
    }

    static void await(final String what, final BooleanSupplier condition)
    {
        await(() -> what, condition);
    }

    /** As {@link #await(String, BooleanSupplier)}; the description is built at the timeout (it shows that state). */
    static void await(final Supplier<String> what, final BooleanSupplier condition)
    {
        final long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(TIMEOUT_MS);
        while (!condition.getAsBoolean())
        {
            if (System.nanoTime() - deadline > 0)
            {
                throw new AssertionError("timed out waiting for: " + what.get());
            }
            try
            {
                Thread.sleep(1);
            }
            catch (final InterruptedException ex)
            {
                Thread.currentThread().interrupt();
                throw new AssertionError(ex);
            }
        }
    }

    /** Deterministic content: byte i of message (seed) is a function of both. */
    static void fill(final MutableDirectBuffer buffer, final int offset, final int length, final long seed)
    {
        int i = 0;
        for (; i + 8 <= length; i += 8)
        {
            buffer.putLong(offset + i, mix(seed, i));
        }
        for (; i < length; i++)
        {
            buffer.putByte(offset + i, (byte)mix(seed, i));
        }
    }

    static boolean check(final DirectBuffer buffer, final int offset, final int length, final long seed)
    {
        int i = 0;
        for (; i + 8 <= length; i += 8)
        {
            if (buffer.getLong(offset + i) != mix(seed, i))
            {
                return false;
            }
        }
        for (; i < length; i++)
        {
            if (buffer.getByte(offset + i) != (byte)mix(seed, i))
            {
                return false;
            }
        }
        return true;
    }

    private static long mix(final long seed, final long i)
    {
        long z = seed * 0x9E3779B97F4A7C15L + i;
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        return z ^ (z >>> 31);
    }

    /**
     * @return an Agrona view of the claim's buffer, indexed as the claim is (from {@link WriteClaim#offset()}), for
     * tests that write with Agrona's byte order and helpers; allocates (tests only).
     */
    static UnsafeBuffer claimed(final WriteClaim claim)
    {
        return new UnsafeBuffer(claim.buffer());
    }

    /** @return true if the active claim goes by rendezvous (the engine keeps its pool buffer in the claim). */
    static boolean isRendezvous(final WriteClaim claim)
    {
        return claim.transportState() instanceof BufferPool.Buffer;
    }

    /**
     * Claims, waiting out back-pressure: over shm a large message's claim waits for the receiver's grant (direct
     * writes, {@link EngineConfig#directWrite(boolean)}).
     */
    static void awaitClaim(final Connection connection, final WriteClaim claim, final int length)
    {
        await("claim of " + length + " bytes", () ->
        {
            final int rc = connection.tryClaim(length, claim);
            if (rc != Connection.OK && rc != Connection.BACK_PRESSURED)
            {
                throw new AssertionError("tryClaim(" + length + ") returned " + Connection.resultName(rc));
            }
            return rc == Connection.OK;
        });
    }

    /** Sends one message, waiting out back-pressure. */
    static long send(final Connection connection, final WriteClaim claim, final int length, final long seed)
    {
        final long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(TIMEOUT_MS);
        while (true)
        {
            final int rc = connection.tryClaim(length, claim);
            if (rc == Connection.OK)
            {
                fill(claimed(claim), claim.offset(), length, seed);
                final long id = claim.token();
                claim.commit();
                return id;
            }
            if (rc != Connection.BACK_PRESSURED)
            {
                throw new AssertionError("tryClaim(" + length + ") returned " + Connection.resultName(rc));
            }
            if (System.nanoTime() - deadline > 0)
            {
                throw new AssertionError("back-pressured for too long sending " + length + " bytes: " + connection);
            }
            Thread.yield();
        }
    }

    /** @return mappings of the peer's grants the connection holds open for direct writes (0 when idle). */
    static int directMappingsOpen(final Connection connection)
    {
        return connection instanceof EngineConnection ? ((EngineConnection)connection).directMappingsOpen() : 0;
    }

    /**
     * Leak check for a connected pair once traffic has stopped: no buffer out of a pool, nothing
     * pending, no mapping of a peer's grant open, and credits conserved in both directions (what one side may still
     * send plus what the other owes it is exactly the window).
     */
    static void assertQuiescent(final Connection a, final Connection b)
    {
        // Described at the timeout: a description built now would show the state before the wait (a receive still
        // being processed looks like a lost credit).
        await(() -> "credits and buffers back on " + a + " (buffers " + a.poolBuffersInUse() + ", rendezvous " +
            a.pendingRendezvous() + ") / " + b + " (buffers " + b.poolBuffersInUse() + ", rendezvous " +
            b.pendingRendezvous() + ")", () ->
            a.poolBuffersInUse() == 0 && b.poolBuffersInUse() == 0 &&
            a.pendingRendezvous() == 0 && b.pendingRendezvous() == 0 &&
            a.sendBytesInFlight() == 0 && b.sendBytesInFlight() == 0 &&
            a.creditsAvailable() + b.creditsOwed() == b.receiveSlots() &&
            b.creditsAvailable() + a.creditsOwed() == a.receiveSlots() &&
            directMappingsOpen(a) == 0 && directMappingsOpen(b) == 0);
        assertThat(a.stats().rnrErrors()).isZero();
        assertThat(b.stats().rnrErrors()).isZero();
    }
}
