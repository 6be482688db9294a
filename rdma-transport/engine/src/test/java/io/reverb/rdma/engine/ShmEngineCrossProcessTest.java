package io.reverb.rdma.engine;

import static io.reverb.rdma.engine.EngineTestSupport.await;
import static io.reverb.rdma.engine.EngineTestSupport.claimed;
import static io.reverb.rdma.engine.EngineTestSupport.awaitClaim;
import static io.reverb.rdma.engine.EngineTestSupport.directMappingsOpen;
import static io.reverb.rdma.engine.EngineTestSupport.fill;
import static org.assertj.core.api.Assertions.assertThat;

import io.reverb.common.WriteClaim;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/** {@link AbstractEngineCrossProcessTest} over shm://, and a direct write whose receiver is killed. */
class ShmEngineCrossProcessTest extends AbstractEngineCrossProcessTest
{
    @Override
    EngineFabric fabric()
    {
        return EngineFabric.SHM;
    }

    @Test
    void shouldKeepAGrantWritableAndThenReleaseEverythingWhenItsReceiverIsKilled() throws Exception
    {
        final Acks acks = new Acks();
        final Connection connection = connect(startChild("hoard", true), acks, true);
        final Queue<Long> failedIds = new ConcurrentLinkedQueue<>();
        final AtomicReference<Throwable> closeCause = new AtomicReference<>();
        connection.setSendErrorHandler((id, length, cause) -> failedIds.add(id));
        connection.onClose(cause -> closeCause.set(cause == null ? new AssertionError("graceful?") : cause));
        final WriteClaim claim = new WriteClaim();
        awaitClaim(connection, claim, 200_000); // granted by the child: its buffer is mapped here
        assertThat(directMappingsOpen(connection)).isEqualTo(1);
        final long id = claim.token();
        child.destroyForcibly();
        await("connection failed", () -> closeCause.get() != null);
        assertThat(closeCause.get()).isInstanceOf(PeerDisconnectedException.class);
        // The receiver is gone; its memory stays mapped here until the claim ends, so writing cannot crash.
        fill(claimed(claim), claim.offset(), 200_000, 3);
        claim.commit();
        assertThat(failedIds).containsExactly(id);
        assertThat(directMappingsOpen(connection)).isZero();
        assertThat(connection.pendingRendezvous()).isZero();
        assertThat(connection.poolBuffersInUse()).isZero();
        assertThat(connection.tryClaim(10, claim)).isEqualTo(Connection.NOT_CONNECTED);
        assertThat(acks.acks).isEmpty();
    }
}
