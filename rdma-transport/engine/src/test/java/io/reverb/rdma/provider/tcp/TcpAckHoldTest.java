package io.reverb.rdma.provider.tcp;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link TcpAckHold}'s decisions, on a clock of its own (no waiting): when a lone ACK may wait for a request of this
 * side, and when holding backs off because the traffic looks one-way.
 */
class TcpAckHoldTest
{
    private static final long HOLD = 500_000;
    private static final int PEER_SEND_QUEUE = 1024;

    private final TcpAckHold hold = new TcpAckHold(PEER_SEND_QUEUE, HOLD);
    private long now = 1_000_000_000L;

    /** An ACK owed, held once, and its hold runs out: it goes alone. @return true if it was held at first */
    private boolean ackTimesOut()
    {
        hold.started(now);
        final boolean held = hold.hold(now, 1, false);
        hold.written(held, false);
        now += HOLD;
        final boolean stillHeld = hold.hold(now, 1, false);
        assertFalse(stillHeld, "a hold that ran out must let the ACK go");
        hold.written(false, true);
        now += 1_000;
        return held;
    }

    /** An ACK owed, held, then a request of this side carries it. @return true if it was held */
    private boolean ackRidesOnRequest()
    {
        hold.started(now);
        final boolean held = hold.hold(now, 1, false);
        now += 10_000;
        hold.written(held, held); // held: the request took it; not held: it went alone
        now += 1_000;
        return held;
    }

    @Test
    void shouldKeepHoldingWhenTimeoutsAreRareInRequestResponseTraffic()
    {
        // 1 MiB echoes: most ACKs ride on the next request, now and then the request comes after the hold time.
        int held = 0;
        int offered = 0;
        for (int round = 0; round < 100; round++)
        {
            if (ackTimesOut())
            {
                held++;
            }
            offered++;
            for (int k = 0; k < 5; k++)
            {
                if (ackRidesOnRequest())
                {
                    held++;
                }
                offered++;
            }
        }
        // Before, each timeout sent the next 256 ACKs alone: 5 of these 600 were held.
        assertEquals(offered, held, "every lone ACK waits for a request while requests keep picking them up");
    }

    @Test
    void shouldBackOffAfterTimeoutsInARow()
    {
        for (int k = 0; k < TcpAckHold.TIMEOUTS_BEFORE_BACKOFF; k++)
        {
            assertTrue(ackTimesOut(), "held until the timeouts in a row say the traffic is one-way: " + k);
        }
        for (int k = 0; k < TcpAckHold.ACK_HOLD_BACKOFF; k++)
        {
            assertFalse(ackRidesOnRequest(), "one-way traffic: ACK " + k + " of the backoff goes at once");
        }
        assertTrue(ackRidesOnRequest(), "holding is tried again after the backoff");
    }

    @Test
    void shouldCountOnlyTimeoutsWithNoPickUpBetween()
    {
        for (int round = 0; round < 50; round++)
        {
            for (int k = 0; k < TcpAckHold.TIMEOUTS_BEFORE_BACKOFF - 1; k++)
            {
                assertTrue(ackTimesOut(), "round " + round + ", timeout " + k);
            }
            assertTrue(ackRidesOnRequest(), "a pick-up starts the count again: round " + round);
        }
    }

    @Test
    void shouldNotCountAFlushBeforeSleepAsATimeout()
    {
        for (int round = 0; round < 10; round++)
        {
            hold.started(now);
            hold.flushNext(true);
            assertFalse(hold.hold(now, 1, false), "the poller sleeps next: the ACK goes now");
            hold.written(false, true);
            hold.flushNext(false);
            now += 1_000;
        }
        assertTrue(ackTimesOut(), "flushes before sleep are not timeouts: no backoff");
        assertTrue(ackRidesOnRequest());
    }

    @Test
    void shouldNeverHoldWhenDownOrWhenManyAcksAreOwed()
    {
        hold.started(now);
        assertFalse(hold.hold(now, 1, true), "a QP that is down holds nothing");
        hold.started(now);
        assertFalse(hold.hold(now, PEER_SEND_QUEUE / 4, false), "a quarter of the peer's send queue goes at once");
        final TcpAckHold off = new TcpAckHold(PEER_SEND_QUEUE, 0);
        off.started(now);
        assertFalse(off.hold(now, 1, false), "hold time 0 sends every ACK at once");
    }
}
