package io.reverb.rpc.lb;

import io.reverb.rpc.ConnectivityState;
import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class PickFirstLoadBalancerTest
{
    private final FakeHelper helper = new FakeHelper();
    private final PickFirstLoadBalancer lb = new PickFirstLoadBalancer(helper);

    @Test
    void shouldConnectOnlyTheFirstAddressAndSendEveryCallThere()
    {
        lb.handleResolvedAddresses(FakeHelper.uris("tcp://a:1", "tcp://b:1"));
        final FakeHelper.FakeSubchannel a = helper.get("tcp://a:1");
        final FakeHelper.FakeSubchannel b = helper.get("tcp://b:1");
        assertThat(a.connectionRequests).isEqualTo(1);
        assertThat(b.connectionRequests).isZero();
        assertThat(helper.state).isEqualTo(ConnectivityState.CONNECTING);

        a.set(ConnectivityState.READY);
        assertThat(helper.state).isEqualTo(ConnectivityState.READY);
        for (int i = 0; i < 10; i++)
        {
            assertThat(helper.picker.pick()).isSameAs(a);
        }
        assertThat(b.connectionRequests).isZero();
    }

    @Test
    void shouldTryTheNextAddressWhenTheFirstFails()
    {
        lb.handleResolvedAddresses(FakeHelper.uris("tcp://a:1", "tcp://b:1"));
        final FakeHelper.FakeSubchannel a = helper.get("tcp://a:1");
        final FakeHelper.FakeSubchannel b = helper.get("tcp://b:1");

        a.set(ConnectivityState.TRANSIENT_FAILURE);
        assertThat(b.connectionRequests).isEqualTo(1);
        assertThat(helper.refreshes).isEqualTo(1);
        b.set(ConnectivityState.READY);
        assertThat(helper.picker.pick()).isSameAs(b);

        // a recovering later does not take the calls back: pick_first sticks
        a.set(ConnectivityState.READY);
        assertThat(helper.picker.pick()).isSameAs(b);
    }

    @Test
    void shouldMoveToAnotherReadySubchannelWhenTheSelectedOneIsDrained()
    {
        lb.handleResolvedAddresses(FakeHelper.uris("tcp://a:1", "tcp://b:1", "tcp://c:1"));
        final FakeHelper.FakeSubchannel a = helper.get("tcp://a:1");
        final FakeHelper.FakeSubchannel c = helper.get("tcp://c:1");
        a.set(ConnectivityState.READY);
        c.set(ConnectivityState.READY);
        assertThat(helper.picker.pick()).isSameAs(a);

        a.set(ConnectivityState.IDLE); // GOAWAY
        assertThat(helper.picker.pick()).isSameAs(c);
    }

    @Test
    void shouldReportFailureWhenEveryAddressFailed()
    {
        lb.handleResolvedAddresses(FakeHelper.uris("tcp://a:1", "tcp://b:1"));
        helper.get("tcp://a:1").set(ConnectivityState.TRANSIENT_FAILURE);
        helper.get("tcp://b:1").set(ConnectivityState.TRANSIENT_FAILURE);
        assertThat(helper.state).isEqualTo(ConnectivityState.TRANSIENT_FAILURE);
        assertThat(helper.picker.pick()).isNull();
        assertThat(helper.picker.noneReadyStatus().description()).contains("tcp://b:1");
    }

    @Test
    void shouldDropTheSelectedSubchannelWhenTheResolverNoLongerListsIt()
    {
        lb.handleResolvedAddresses(FakeHelper.uris("tcp://a:1", "tcp://b:1"));
        final FakeHelper.FakeSubchannel a = helper.get("tcp://a:1");
        final FakeHelper.FakeSubchannel b = helper.get("tcp://b:1");
        a.set(ConnectivityState.READY);

        lb.handleResolvedAddresses(FakeHelper.uris("tcp://b:1"));
        assertThat(a.shutdown).isTrue();
        assertThat(lb.selected()).isNull();
        assertThat(b.connectionRequests).isEqualTo(1);
        b.set(ConnectivityState.READY);
        assertThat(helper.picker.pick()).isSameAs(b);
    }
}
