package io.reverb.rdma.engine;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class CreditWindowTest
{
    @Test
    void connectorStartsWithThePeersReceivesAndOwesAllItsOwn()
    {
        final CreditWindow window = new CreditWindow(8);
        window.start(false, 16, 8);
        assertThat(window.credits()).isEqualTo(16);
        assertThat(window.owed()).isEqualTo(8);
        assertThat(window.canSendData()).isTrue();
    }

    @Test
    void acceptorWaitsForTheConnectorsFirstBatch()
    {
        final CreditWindow window = new CreditWindow(8);
        window.start(true, 16, 8);
        assertThat(window.credits()).isZero();
        assertThat(window.owed()).isZero();
        assertThat(window.canSendData()).isFalse();
        assertThat(window.canSendControlOnly()).isFalse();
        window.onCreditsReturned(16);
        assertThat(window.canSendData()).isTrue();
    }

    @Test
    void shouldReserveTheLastCreditForBatchesThatReturnCredits()
    {
        final CreditWindow window = new CreditWindow(8);
        window.start(true, 1, 8);
        window.onCreditsReturned(1);
        assertThat(window.canSendData()).as("data never takes the last credit").isFalse();
        assertThat(window.canSendControlOnly()).as("nothing owed: the last credit stays").isFalse();
        window.onReceivesReposted(1);
        assertThat(window.canSendControlOnly()).as("a batch returning a credit may take it").isTrue();
        window.onBatchPosted();
        assertThat(window.credits()).isZero();
        assertThat(window.owed()).isZero();
    }

    @Test
    void dataNeedsTwoCredits()
    {
        final CreditWindow window = new CreditWindow(8);
        window.start(true, 2, 8);
        window.onCreditsReturned(2);
        assertThat(window.canSendData()).isTrue();
        window.onWritePosted();
        assertThat(window.canSendData()).isFalse();
        assertThat(window.credits()).isEqualTo(1);
    }

    @Test
    void shouldDueACreditReturnOnceHalfTheReceiveWindowIsOwed()
    {
        final CreditWindow window = new CreditWindow(8);
        window.start(true, 4, 8);
        window.onCreditsReturned(4);
        window.onReceivesReposted(3);
        assertThat(window.creditReturnDue()).isFalse();
        window.onReceivesReposted(1);
        assertThat(window.creditReturnDue()).isTrue();
        window.onBatchPosted();
        assertThat(window.creditReturnDue()).isFalse();
        assertThat(window.credits()).isEqualTo(3);
    }

    @Test
    void shouldRefuseCreditsBeyondThePeersReceives()
    {
        final CreditWindow window = new CreditWindow(8);
        window.start(false, 16, 8);
        assertThat(window.onCreditsReturned(1)).as("the connector starts with all 16").isFalse();
        window.onBatchPosted();
        window.onWritePosted();
        assertThat(window.onCreditsReturned(3)).isFalse();
        assertThat(window.credits()).as("unchanged by a refused return").isEqualTo(14);
        assertThat(window.onCreditsReturned(2)).isTrue();
        assertThat(window.credits()).isEqualTo(16);
        final CreditWindow acceptor = new CreditWindow(8);
        acceptor.start(true, 16, 8);
        assertThat(acceptor.onCreditsReturned(Integer.MAX_VALUE)).as("no wrap past int").isFalse();
        assertThat(acceptor.credits()).isZero();
    }

    @Test
    void aSingleSlotWindowReturnsEveryCredit()
    {
        final CreditWindow window = new CreditWindow(1);
        window.start(true, 1, 1);
        assertThat(window.creditReturnDue()).isFalse();
        window.onReceivesReposted(1);
        assertThat(window.creditReturnDue()).isTrue();
    }

    @Test
    void shouldLetThePeerReturnOnlyWhatThisSideConsumed()
    {
        final CreditWindow connector = new CreditWindow(8);
        connector.start(false, 4, 8);
        assertThat(connector.returnLimit()).as("nothing consumed yet").isZero();
        connector.beforePost();
        connector.onBatchPosted();
        connector.beforePost();
        connector.onWritePosted();
        assertThat(connector.returnLimit()).isEqualTo(2);
        assertThat(connector.credits()).isEqualTo(2);

        final CreditWindow acceptor = new CreditWindow(8);
        acceptor.start(true, 4, 8);
        assertThat(acceptor.returnLimit()).as("the connector's first batch announces its 4 receives").isEqualTo(4);
        assertThat(acceptor.onCreditsReturned(4)).isTrue();
        acceptor.beforePost();
        acceptor.onBatchPosted();
        assertThat(acceptor.returnLimit()).isEqualTo(5);
        assertThat(acceptor.onCreditsReturned(2)).as("one more than was consumed").isFalse();
        assertThat(acceptor.onCreditsReturned(1)).isTrue();
    }
}
