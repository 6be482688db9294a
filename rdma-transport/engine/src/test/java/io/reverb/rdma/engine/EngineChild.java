package io.reverb.rdma.engine;

import io.reverb.common.WriteClaim;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * The other process of the cross-process tests. Usage: {@code EngineChild <verify|hoard> <SHM|TCP> <listen address>}.
 * Prints {@code READY <address> micrometer=<true|false>} once listening, then serves one connection:
 * <ul>
 *   <li>verify: checks message i against the content pattern of seed i and answers a 24-byte ack
 *       (index, length, content ok, its pool buffers in use during the delivery, its RNR errors).</li>
 *   <li>hoard: like verify, but retains every message forever, so its small rendezvous pool runs
 *       dry and further requests queue (the parent then kills this process mid-rendezvous).</li>
 * </ul>
 */
public final class EngineChild
{
    private EngineChild()
    {
    }

    public static void main(final String[] args) throws Exception
    {
        final String mode = args[0];
        final EngineFabric fabric = EngineFabric.valueOf(args[1]);
        final String listenAddress = args[2];
        boolean micrometer;
        try
        {
            Class.forName("io.micrometer.core.instrument.MeterRegistry");
            micrometer = true;
        }
        catch (final ClassNotFoundException ex)
        {
            micrometer = false;
        }
        final boolean hoard = "hoard".equals(mode);
        final EngineConfig config = EngineTestSupport.config(fabric, PollingMode.ADAPTIVE).name("child")
            .maxInboundMessageSize(hoard ? 256 * 1024 : 64 * 1024 * 1024)
            .maxOutboundMessageSize(hoard ? 256 * 1024 : 64 * 1024 * 1024)
            .rendezvousPoolBytes(hoard ? 512 * 1024 : 128L * 1024 * 1024);
        final CountDownLatch closed = new CountDownLatch(1);
        final List<RetainedMessage> hoarded = new ArrayList<>();
        try (RdmaEngine engine = RdmaEngine.open(fabric.scheme(), config))
        {
            final EngineListener listener = engine.listen(listenAddress, c ->
            {
                final WriteClaim ack = new WriteClaim();
                final long[] index = {0};
                c.onClose(cause -> closed.countDown());
                c.setHandler((buffer, offset, length) ->
                {
                    final long i = index[0]++;
                    final boolean ok = EngineTestSupport.check(buffer, offset, length, i);
                    if (hoard && length > c.eagerLimit())
                    {
                        hoarded.add(c.retain());
                    }
                    if (c.tryClaim(24, ack) == Connection.OK)
                    {
                        EngineTestSupport.claimed(ack).putInt(ack.offset(), (int)i);
                        EngineTestSupport.claimed(ack).putInt(ack.offset() + 4, length);
                        EngineTestSupport.claimed(ack).putInt(ack.offset() + 8, ok ? 1 : 0);
                        EngineTestSupport.claimed(ack).putInt(ack.offset() + 12, c.poolBuffersInUse());
                        EngineTestSupport.claimed(ack).putLong(ack.offset() + 16, c.stats().rnrErrors());
                        ack.commit();
                    }
                    else
                    {
                        System.out.println("ACK-BACK-PRESSURED " + i);
                    }
                });
            });
            System.out.println("READY " + listener.address() + " micrometer=" + micrometer);
            System.out.flush();
            closed.await(10, TimeUnit.MINUTES);
        }
        System.out.println("CLOSED");
    }
}
