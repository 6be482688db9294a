package io.reverb.rdma.provider.disni;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.ibm.disni.verbs.RdmaCmEvent;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** How connection set-up waits for rdma_cm events (the events themselves need a device). */
class DisniCmWaiterTest
{
    private final CmEventDispatcher.Waiter waiter = new CmEventDispatcher.Waiter();

    @Test
    void shouldReturnWhenTheExpectedEventArrives() throws IOException
    {
        waiter.onCmEvent(CmEventDispatcher.ADDR_RESOLVED, null);

        waiter.await(CmEventDispatcher.ADDR_RESOLVED, TimeUnit.SECONDS.toNanos(1), "resolving");
    }

    @Test
    void shouldNameTheEventThatArrivedInstead()
    {
        final int rejected = RdmaCmEvent.EventType.RDMA_CM_EVENT_REJECTED.ordinal();
        waiter.onCmEvent(rejected, null);

        assertThatThrownBy(() -> waiter.await(CmEventDispatcher.ESTABLISHED, TimeUnit.SECONDS.toNanos(1), "connecting to x"))
            .isInstanceOf(IOException.class)
            .hasMessage("connecting to x: rdma_cm reported RDMA_CM_EVENT_REJECTED instead of RDMA_CM_EVENT_ESTABLISHED");
    }

    @Test
    void shouldTimeOutNamingTheStep()
    {
        assertThatThrownBy(() -> waiter.await(CmEventDispatcher.ROUTE_RESOLVED, TimeUnit.MILLISECONDS.toNanos(10), "route"))
            .isInstanceOf(IOException.class)
            .hasMessageStartingWith("route: timed out");
    }

    @Test
    void shouldForwardPendingAndLaterEventsToTheEstablishedQueuePair()
    {
        final List<Integer> seen = new ArrayList<>();
        waiter.onCmEvent(CmEventDispatcher.DISCONNECTED, null);

        waiter.handOver((event, id) -> seen.add(event));
        waiter.onCmEvent(CmEventDispatcher.DEVICE_REMOVAL, null);

        assertThat(seen).containsExactly(CmEventDispatcher.DISCONNECTED, CmEventDispatcher.DEVICE_REMOVAL);
    }

    @Test
    void shouldUseRdmaCmEventNumbers()
    {
        // DiSNi passes rdma_cm's enum rdma_cm_event_type through as the ordinal of its EventType.
        assertThat(CmEventDispatcher.ADDR_RESOLVED).isZero();
        assertThat(CmEventDispatcher.CONNECT_REQUEST).isEqualTo(4);
        assertThat(CmEventDispatcher.ESTABLISHED).isEqualTo(9);
        assertThat(CmEventDispatcher.DISCONNECTED).isEqualTo(10);
        assertThat(CmEventDispatcher.DEVICE_REMOVAL).isEqualTo(11);
        assertThat(CmEventDispatcher.name(9)).isEqualTo("RDMA_CM_EVENT_ESTABLISHED");
        assertThat(CmEventDispatcher.name(99)).isEqualTo("event 99");
    }
}
