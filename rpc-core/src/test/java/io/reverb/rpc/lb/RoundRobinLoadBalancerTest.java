package io.reverb.rpc.lb;

import io.reverb.rpc.ConnectivityState;
import static org.assertj.core.api.Assertions.assertThat;

import io.reverb.rpc.StatusCode;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

class RoundRobinLoadBalancerTest
{
    private final FakeHelper helper = new FakeHelper();
    private final RoundRobinLoadBalancer lb = new RoundRobinLoadBalancer(helper);

    @Test
    void shouldConnectEveryAddressAndReportConnectingUntilOneIsReady()
    {
        lb.handleResolvedAddresses(FakeHelper.uris("tcp://a:1", "tcp://b:1", "shm://c"));

        assertThat(helper.created).hasSize(3);
        assertThat(helper.all).allSatisfy(s -> assertThat(s.connectionRequests).isEqualTo(1));
        assertThat(helper.state).isEqualTo(ConnectivityState.CONNECTING);
        assertThat(helper.picker.pick()).isNull();
    }

    @Test
    void shouldSpreadPicksEvenlyOverReadySubchannelsOnly()
    {
        lb.handleResolvedAddresses(FakeHelper.uris("tcp://a:1", "tcp://b:1", "tcp://c:1"));
        helper.get("tcp://a:1").set(ConnectivityState.READY);
        helper.get("tcp://c:1").set(ConnectivityState.READY);

        final Map<Subchannel, Integer> counts = count(1000);
        assertThat(counts).containsOnlyKeys(helper.get("tcp://a:1"), helper.get("tcp://c:1"));
        assertThat(counts.values()).containsOnly(500);

        helper.get("tcp://b:1").set(ConnectivityState.READY);
        assertThat(count(999).values()).containsOnly(333);
    }

    @Test
    void shouldStopPickingASubchannelThatFailsOrIsDrainedAndReconnectADrainedOne()
    {
        lb.handleResolvedAddresses(FakeHelper.uris("tcp://a:1", "tcp://b:1"));
        final FakeHelper.FakeSubchannel a = helper.get("tcp://a:1");
        final FakeHelper.FakeSubchannel b = helper.get("tcp://b:1");
        a.set(ConnectivityState.READY);
        b.set(ConnectivityState.READY);

        a.set(ConnectivityState.TRANSIENT_FAILURE); // e.g. NOT_SERVING, or the process died
        assertThat(count(10)).containsOnlyKeys(b);
        assertThat(helper.refreshes).isEqualTo(1);

        b.set(ConnectivityState.IDLE); // GOAWAY: drained
        assertThat(b.connectionRequests).isEqualTo(2);
        assertThat(helper.state).isEqualTo(ConnectivityState.CONNECTING);
        assertThat(helper.picker.pick()).isNull();
        assertThat(helper.picker.noneReadyStatus().code()).isEqualTo(StatusCode.UNAVAILABLE);
    }

    @Test
    void shouldReportTransientFailureWithTheErrorWhenAllFailed()
    {
        lb.handleResolvedAddresses(FakeHelper.uris("tcp://a:1"));
        helper.get("tcp://a:1").set(ConnectivityState.TRANSIENT_FAILURE);

        assertThat(helper.state).isEqualTo(ConnectivityState.TRANSIENT_FAILURE);
        assertThat(helper.picker.noneReadyStatus().description()).contains("tcp://a:1");
    }

    @Test
    void shouldKeepSurvivingSubchannelsAndShutDownDroppedOnesOnResolverUpdate()
    {
        lb.handleResolvedAddresses(FakeHelper.uris("tcp://a:1", "tcp://b:1"));
        final FakeHelper.FakeSubchannel a = helper.get("tcp://a:1");
        final FakeHelper.FakeSubchannel b = helper.get("tcp://b:1");
        a.set(ConnectivityState.READY);
        b.set(ConnectivityState.READY);
        a.load().callStarted(); // a call in flight on a

        lb.handleResolvedAddresses(FakeHelper.uris("tcp://b:1", "tcp://c:1"));

        assertThat(a.shutdown).isTrue();
        assertThat(b.shutdown).isFalse();
        assertThat(helper.all).hasSize(3); // b kept, not re-created
        assertThat(lb.subchannels()).extracting(Subchannel::address).map(Object::toString)
            .containsExactly("tcp://b:1", "tcp://c:1");
        assertThat(count(10)).containsOnlyKeys(b);
        // a late event from the dropped subchannel changes nothing
        final int updates = helper.pickerUpdates;
        a.listener.onStateChange(a, ConnectivityState.READY);
        assertThat(helper.pickerUpdates).isEqualTo(updates);
    }

    @Test
    void shouldKeepThePickerWhenTheReadySetDoesNotChange()
    {
        lb.handleResolvedAddresses(FakeHelper.uris("tcp://a:1", "tcp://b:1"));
        helper.get("tcp://a:1").set(ConnectivityState.READY);
        final Picker picker = helper.picker;
        helper.get("tcp://b:1").set(ConnectivityState.CONNECTING);
        assertThat(helper.picker).isSameAs(picker);
    }

    @Test
    void shouldShutDownEverySubchannel()
    {
        lb.handleResolvedAddresses(FakeHelper.uris("tcp://a:1", "tcp://b:1"));
        lb.shutdown();
        assertThat(helper.all).allSatisfy(s -> assertThat(s.shutdown).isTrue());
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
