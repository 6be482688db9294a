package io.reverb.rpc.lb;

import io.reverb.rpc.ConnectivityState;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.offset;

import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

class PeakEwmaLoadBalancerTest
{
    private final FakeHelper helper = new FakeHelper();
    private final PeakEwmaLoadBalancer lb = new PeakEwmaLoadBalancer(helper);

    @Test
    void shouldAvoidASlowReplicaOnceItsFirstSlowAnswerCameBack()
    {
        lb.handleResolvedAddresses(FakeHelper.uris("tcp://a:1", "tcp://b:1", "tcp://c:1"));
        helper.all.forEach(s -> s.set(ConnectivityState.READY));
        helper.get("tcp://a:1").load().callStarted();
        helper.get("tcp://a:1").load().callFinished(10_000);
        helper.get("tcp://b:1").load().callStarted();
        helper.get("tcp://b:1").load().callFinished(10_000);
        final FakeHelper.FakeSubchannel slow = helper.get("tcp://c:1");
        slow.load().callStarted();
        slow.load().callFinished(100_000); // 10x slower

        final Map<Subchannel, Integer> counts = count(3000);
        assertThat(counts.getOrDefault(slow, 0)).isZero();
        assertThat(counts.get(helper.get("tcp://a:1"))).isBetween(1000, 2000);
    }

    @Test
    void shouldPreferTheReplicaWithFewerCallsOutstandingAtEqualLatency()
    {
        lb.handleResolvedAddresses(FakeHelper.uris("tcp://a:1", "tcp://b:1"));
        helper.all.forEach(s -> s.set(ConnectivityState.READY));
        final FakeHelper.FakeSubchannel a = helper.get("tcp://a:1");
        final FakeHelper.FakeSubchannel b = helper.get("tcp://b:1");
        a.load().callStarted();
        a.load().callFinished(10_000);
        b.load().callStarted();
        b.load().callFinished(10_000);
        a.load().callStarted();
        a.load().callStarted();

        assertThat(count(100)).containsOnlyKeys(b);
    }

    @Test
    void shouldSendOneProbeAtATimeToAReplicaNeverMeasured()
    {
        lb.handleResolvedAddresses(FakeHelper.uris("tcp://a:1", "tcp://b:1"));
        helper.all.forEach(s -> s.set(ConnectivityState.READY));
        final FakeHelper.FakeSubchannel a = helper.get("tcp://a:1");
        final FakeHelper.FakeSubchannel fresh = helper.get("tcp://b:1");
        a.load().callStarted();
        a.load().callFinished(10_000);

        assertThat(helper.picker.pick()).isSameAs(fresh); // idle and unmeasured: cost 0
        fresh.load().callStarted();
        assertThat(count(100)).containsOnlyKeys(a); // its probe is out: wait for the answer
    }

    @Test
    void shouldProbeASlowReplicaAgainOnceItsAverageHasDecayed()
    {
        lb.handleResolvedAddresses(FakeHelper.uris("tcp://a:1", "tcp://b:1"));
        helper.all.forEach(s -> s.set(ConnectivityState.READY));
        final FakeHelper.FakeSubchannel fast = helper.get("tcp://a:1");
        final FakeHelper.FakeSubchannel slow = helper.get("tcp://b:1");
        fast.load().callStarted();
        fast.load().callFinished(10_000);
        slow.load().callStarted();
        slow.load().callFinished(1_000_000);
        fast.load().callStarted(); // keep the fast one's average fresh: one call outstanding
        assertThat(count(100)).containsOnlyKeys(fast);

        helper.clock[0] += 2_000_000_000L; // 10 decay constants later, both averages have decayed alike
        fast.load().callFinished(10_000);  // ... but the fast one has a fresh sample
        assertThat(count(100)).containsKey(slow);
    }

    @Test
    void shouldForgetAHiccupAfterAFewDozenFastAnswers()
    {
        final long[] clock = {0};
        final SubchannelLoad load = new SubchannelLoad(() -> clock[0], 50_000_000L);
        load.callStarted();
        load.callFinished(30_000);
        load.callStarted();
        load.callFinished(1_000_000); // a 1 ms hiccup: the average at most doubles
        assertThat(load.latencyNanos(0)).isEqualTo(60_000.0);
        clock[0] = SubchannelLoad.GROWTH_WINDOW_NANOS; // a second slow answer later (the decay is negligible)
        load.callStarted();
        load.callFinished(1_000_000);
        assertThat(load.latencyNanos(clock[0])).isCloseTo(120_000.0, offset(10.0));
        for (int i = 0; i < 40; i++)
        {
            load.callStarted();
            load.callFinished(30_000);
        }
        assertThat(load.latencyNanos(clock[0])).isBetween(30_000.0, 33_000.0);
        assertThat(load.outstanding()).isZero();
    }

    @Test
    void shouldProbeAReplicaThatStaysSlowEverMoreRarelyAndForgetItAtItsFirstFastAnswer()
    {
        final long[] clock = {0};
        final SubchannelLoad load = new SubchannelLoad(() -> clock[0], 50_000_000L);
        load.callStarted();
        load.callFinished(4_000_000); // a 4 ms replica
        final double afterOneConstant = load.latencyNanos(50_000_000L);
        assertThat(afterOneConstant).isCloseTo(4_000_000 / Math.E, offset(1.0));

        // three probes, each after the average decayed by one (current) time constant, each finding it still slow
        for (int probe = 1; probe <= 3; probe++)
        {
            clock[0] += 50_000_000L * load.decayBackoff();
            load.callStarted();
            load.callFinished(4_000_000);
            assertThat(load.decayBackoff()).isEqualTo(1 << probe);
        }
        // it now takes 8 time constants to decay as far as one did at first
        assertThat(load.latencyNanos(clock[0] + 50_000_000L)).isGreaterThan(3_000_000.0);
        assertThat(load.latencyNanos(clock[0] + 8 * 50_000_000L)).isCloseTo(afterOneConstant,
            offset(1.0));

        // capped
        for (int probe = 0; probe < 10; probe++)
        {
            clock[0] += 50_000_000L * load.decayBackoff();
            load.callStarted();
            load.callFinished(4_000_000);
        }
        assertThat(load.decayBackoff()).isEqualTo(SubchannelLoad.MAX_DECAY_BACKOFF);

        // it recovered: the first fast answer ends the backoff
        clock[0] += 50_000_000L * load.decayBackoff();
        load.callStarted();
        load.callFinished(400_000);
        assertThat(load.decayBackoff()).isEqualTo(1);
    }

    @Test
    void shouldProbeAReplicaThatStaysTenTimesSlowerOnlyAFewTimesInTenSeconds()
    {
        // simulated time: a pick every 100 us for 10 s; fast replicas answer in 0.4 ms, the slow one in 4 ms
        lb.handleResolvedAddresses(FakeHelper.uris("tcp://a:1", "tcp://b:1", "tcp://c:1"));
        helper.all.forEach(s -> s.set(ConnectivityState.READY));
        final FakeHelper.FakeSubchannel slow = helper.get("tcp://c:1");
        slow.load().callStarted();
        slow.load().callFinished(4_000_000);
        long slowAnswerAt = -1;
        int probes = 0;
        for (int step = 0; step < 100_000; step++)
        {
            helper.clock[0] += 100_000L;
            if (slowAnswerAt >= 0 && helper.clock[0] >= slowAnswerAt)
            {
                slow.load().callFinished(4_000_000);
                slowAnswerAt = -1;
            }
            final Subchannel picked = helper.picker.pick();
            picked.load().callStarted();
            if (picked == slow)
            {
                probes++;
                slowAnswerAt = helper.clock[0] + 4_000_000L;
            }
            else
            {
                picked.load().callFinished(400_000);
            }
        }
        // with a fixed 200 ms decay it would be probed every ~460 ms (about 21 times); each probe that finds it
        // still slow doubles the wait: 0.46, 0.92, 1.8, 3.7, 7.4 s
        assertThat(probes).isBetween(2, 8);
        assertThat(slow.load().decayBackoff()).isGreaterThan(1);
    }

    @Test
    void shouldNotBackOffProbingForAReplicaInSteadyUse()
    {
        final long[] clock = {0};
        final SubchannelLoad load = new SubchannelLoad(() -> clock[0], 50_000_000L);
        for (int i = 0; i < 100; i++)
        {
            clock[0] += 100_000L; // answers every 100 us: its average never decays much between them
            load.callStarted();
            load.callFinished(i % 10 == 0 ? 2_000_000 : 300_000); // with hiccups
        }
        assertThat(load.decayBackoff()).isEqualTo(1);
    }

    @Test
    void shouldCountAStallThatDelayedEveryOutstandingCallAsOnePeak()
    {
        final long[] clock = {0};
        final SubchannelLoad load = new SubchannelLoad(() -> clock[0], 50_000_000L);
        load.callStarted();
        load.callFinished(300_000);
        for (int i = 0; i < 4; i++)
        {
            load.callStarted();
        }
        clock[0] += 20_000_000L; // the replica's process stalls for 20 ms: its four calls answer together
        for (int i = 0; i < 4; i++)
        {
            load.callFinished(20_000_000);
            clock[0] += 10_000L;
        }
        // one peak: doubled once (less the decay of 20 ms), not 16-fold
        assertThat(load.latencyNanos(clock[0])).isLessThan(600_000.0).isGreaterThan(300_000.0);

        // a replica that really turned slow keeps doubling, once per answer spread over time
        for (int i = 0; i < 4; i++)
        {
            clock[0] += 20_000_000L;
            load.callStarted();
            load.callFinished(20_000_000);
        }
        assertThat(load.latencyNanos(clock[0])).isGreaterThan(5_000_000.0);
    }

    @Test
    void shouldNotPickTheSlowReplicaWhileOneFastReplicaStalledAndTheOtherIsFine()
    {
        lb.handleResolvedAddresses(FakeHelper.uris("tcp://a:1", "tcp://b:1", "tcp://c:1"));
        helper.all.forEach(s -> s.set(ConnectivityState.READY));
        final FakeHelper.FakeSubchannel fine = helper.get("tcp://a:1");
        final FakeHelper.FakeSubchannel stalled = helper.get("tcp://b:1");
        final FakeHelper.FakeSubchannel slow = helper.get("tcp://c:1");
        fine.load().callStarted();
        fine.load().callFinished(300_000);
        stalled.load().callStarted();
        stalled.load().callFinished(3_000_000); // its last answers peaked
        slow.load().callStarted();
        slow.load().callFinished(4_000_000);
        for (int i = 0; i < 4; i++)
        {
            fine.load().callStarted();
            stalled.load().callStarted();
        }
        // costs: fine 0.3 ms x 5, stalled 3 ms x 5, slow 4 ms x 1. Two random choices would take the slow one
        // whenever it drew the pair (stalled, slow); three replicas are all compared
        assertThat(count(1000)).containsOnlyKeys(fine);
    }

    @Test
    void shouldTakeTheOnlyReadyOneWithoutDrawing()
    {
        lb.handleResolvedAddresses(FakeHelper.uris("tcp://a:1", "tcp://b:1"));
        helper.get("tcp://b:1").set(ConnectivityState.READY);
        assertThat(count(10)).containsOnlyKeys(helper.get("tcp://b:1"));
    }

    private Map<Subchannel, Integer> count(final int picks)
    {
        final Map<Subchannel, Integer> counts = new HashMap<>();
        for (int i = 0; i < picks; i++)
        {
            counts.merge(helper.picker.pick(), 1, Integer::sum);
        }
        return counts;
    }
}
