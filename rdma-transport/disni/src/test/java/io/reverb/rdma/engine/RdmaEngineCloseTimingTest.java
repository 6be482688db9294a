package io.reverb.rdma.engine;

import static io.reverb.rdma.engine.EngineTestSupport.await;
import static org.assertj.core.api.Assertions.assertThat;

import io.reverb.common.WriteClaim;
import io.reverb.rdma.provider.disni.EmulatedDeviceLeakCheck;
import io.reverb.rdma.provider.disni.RdmaTestDevice;
import io.reverb.rdma.provider.disni.emu.EmulatedFabric;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The engine's graceful close over rdma:// where the network's timing is not the in-process one: a SEND's receive
 * completion at the peer and its ACK (the sender's completion) travel apart, so the peer can have disconnected
 * before this side sees its CLOSE completed. Runs over the emulated device only (it delays ACKs on purpose).
 */
@ExtendWith(EmulatedDeviceLeakCheck.class)
@Tag(RdmaTestDevice.EMULATION_ONLY_TAG)
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class RdmaEngineCloseTimingTest
{
    @Test
    void shouldCloseGracefullyWhenTheAcceptingSidesAnswerIsAckedLate() throws Exception
    {
        // The client closes; the server's answering CLOSE reaches the client long before its ACK reaches the server.
        closeWithLateAcks(false);
    }

    @Test
    void shouldCloseGracefullyWhenTheConnectingSidesAnswerIsAckedLate() throws Exception
    {
        // The server closes; the client's answering CLOSE reaches the server long before its ACK reaches the client.
        closeWithLateAcks(true);
    }

    private static void closeWithLateAcks(final boolean serverCloses) throws Exception
    {
        Assumptions.assumeTrue(RdmaTestDevice.isEmulated(), "delays ACKs through the emulated device; this host runs a real one");
        final AtomicInteger received = new AtomicInteger();
        final AtomicReference<Throwable> serverCause = new AtomicReference<>(new Throwable("not closed"));
        final AtomicReference<Throwable> clientCause = new AtomicReference<>(new Throwable("not closed"));
        try (EnginePair pair = new EnginePair(RdmaEngineFabric.RDMA, EngineTestSupport.config(RdmaEngineFabric.RDMA,
            PollingMode.ADAPTIVE), EngineTestSupport.config(RdmaEngineFabric.RDMA, PollingMode.ADAPTIVE), c ->
        {
            c.setHandler((buffer, offset, length) -> received.incrementAndGet());
            c.onClose(serverCause::set);
        }))
        {
            pair.client.onClose(clientCause::set);
            final WriteClaim claim = new WriteClaim();
            for (int i = 0; i < 10; i++)
            {
                assertThat(pair.client.tryClaim(64, claim)).isEqualTo(Connection.OK);
                claim.commit();
            }
            await("delivered", () -> received.get() == 10);
            final long late = TimeUnit.MILLISECONDS.toNanos(500);
            try (AutoCloseable slowAcks = serverCloses ? EmulatedFabric.instance().delayAcksToConnectingSide(late) :
                EmulatedFabric.instance().delayAcksToAcceptedSide(late))
            {
                (serverCloses ? pair.server : pair.client).close();
                await("closed on both sides", () -> pair.client.isClosed() && pair.server.isClosed());
            }
            assertThat(clientCause.get()).as("the connecting side's close").isNull();
            assertThat(serverCause.get()).as("the accepting side's close").isNull();
            assertThat(pair.serverEngine.connections()).isEmpty();
            assertThat(pair.clientEngine.connections()).isEmpty();
        }
    }
}
