package io.reverb.rdma.rpc;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.InetAddress;
import java.net.UnknownHostException;
import org.junit.jupiter.api.Test;

/**
 * {@link FabricTickets}: a peer that floods HELLOs takes its own share of tickets only; tickets expire, are one-use,
 * and come back when their connection is done with them; the clock is the test's.
 */
class FabricTicketsTest
{
    private static final byte[] BINDING = new byte[FabricMessages.BINDING_LENGTH];

    @Test
    void shouldKeepIssuingToOtherAddressesWhileOneAddressFloods()
    {
        final FabricTickets tickets = new FabricTickets();
        final long now = 1_000;
        int refused = 0;
        for (int i = 0; i < 10_000; i++)
        {
            if (tickets.issue(FabricMessages.random(16), "10.0.0.66", BINDING, now) != null)
            {
                refused++;
            }
        }
        assertThat(tickets.held("10.0.0.66")).isEqualTo(FabricTickets.MAX_PER_PEER);
        assertThat(refused).isEqualTo(10_000 - FabricTickets.MAX_PER_PEER);
        assertThat(tickets.issue(FabricMessages.random(16), "10.0.0.7", BINDING, now)).as("another address")
            .isNull();
        assertThat(tickets.issue(FabricMessages.random(16), "10.0.0.66", BINDING, now)).as("the flooder, told why")
            .contains("outstanding for the client's address 10.0.0.66");
    }

    @Test
    void shouldBoundTheTableOverAllAddressesAndExpireOldTickets()
    {
        final FabricTickets tickets = new FabricTickets(8, 4);
        for (int i = 0; i < 8; i++)
        {
            assertThat(tickets.issue(FabricMessages.random(16), "10.0.0." + i, BINDING, 0)).isNull();
        }
        assertThat(tickets.issue(FabricMessages.random(16), "10.0.0.99", BINDING, 0))
            .contains("8 upgrade tickets are outstanding on this server");
        assertThat(tickets.issue(FabricMessages.random(16), "10.0.0.99", BINDING, FabricTickets.LIFETIME_NANOS + 1))
            .as("the old ones expired").isNull();
        assertThat(tickets.size()).isEqualTo(1);
    }

    @Test
    void shouldGiveATicketOnceAndTakeItBackWhenItsConnectionIsDone()
    {
        final FabricTickets tickets = new FabricTickets(8, 1);
        final byte[] ticket = FabricMessages.random(16);
        assertThat(tickets.issue(ticket, "10.0.0.1", BINDING, 0)).isNull();
        assertThat(tickets.take(ticket, FabricTickets.LIFETIME_NANOS + 1)).as("expired").isNull();
        assertThat(tickets.issue(ticket, "10.0.0.1", BINDING, 0)).isNull();
        assertThat(tickets.take(ticket, 5)).isNotNull();
        assertThat(tickets.take(ticket, 5)).as("used").isNull();
        final byte[] second = FabricMessages.random(16);
        assertThat(tickets.issue(second, "10.0.0.1", BINDING, 0)).isNull();
        assertThat(tickets.issue(FabricMessages.random(16), "10.0.0.1", BINDING, 0)).isNotNull();
        tickets.release(second); // its connection closed, or its client stayed on tcp
        assertThat(tickets.held("10.0.0.1")).isZero();
        assertThat(tickets.issue(FabricMessages.random(16), "10.0.0.1", BINDING, 0)).isNull();
    }

    @Test
    void shouldNotGiveATicketThatIsAlreadyOutstandingAndKeepTheCountsTrue()
    {
        final FabricTickets tickets = new FabricTickets(8, 4);
        final byte[] ticket = FabricMessages.random(16);
        assertThat(tickets.issue(ticket, "10.0.0.1", BINDING, 0)).isNull();
        assertThat(tickets.issue(ticket.clone(), "10.0.0.1", BINDING, 0)).contains("already outstanding");
        assertThat(tickets.held("10.0.0.1")).isEqualTo(1);
        tickets.release(ticket);
        assertThat(tickets.held("10.0.0.1")).as("back to none, not stuck at one").isZero();
        assertThat(tickets.size()).isZero();
    }

    @Test
    void shouldCountAnIpv6PeerByItsSlash64() throws UnknownHostException
    {
        assertThat(FabricTickets.peerKey(InetAddress.getByName("2001:db8:1:2::5")))
            .isEqualTo(FabricTickets.peerKey(InetAddress.getByName("2001:db8:1:2:ffff::9")))
            .isNotEqualTo(FabricTickets.peerKey(InetAddress.getByName("2001:db8:1:3::5")));
        assertThat(FabricTickets.peerKey(InetAddress.getByName("10.1.2.3"))).isEqualTo("10.1.2.3");
    }
}
