package io.reverb.rdma.engine;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** Unproven connections counted per host: what a host is, and that one host's count never limits another's. */
class UnprovenPeersTest
{
    @Test
    void shouldCountAnAddressAnIpv6PrefixOrAnShmProcessAsOneHost()
    {
        assertThat(UnprovenPeers.hostOf("192.0.2.7:40000")).isEqualTo("192.0.2.7");
        assertThat(UnprovenPeers.hostOf("192.0.2.7")).isEqualTo("192.0.2.7");
        // the addresses of one /64 are one subscriber's to choose: they count together
        assertThat(UnprovenPeers.hostOf("[2001:db8:1:2::10]:40000")).isEqualTo(UnprovenPeers.hostOf("[2001:db8:1:2:ffff::1]:1"))
            .isEqualTo("20010db800010002::/64");
        assertThat(UnprovenPeers.hostOf("[2001:db8:1:3::10]:40000")).isNotEqualTo(UnprovenPeers.hostOf("[2001:db8:1:2::10]:1"));
        assertThat(UnprovenPeers.hostOf("shm://pid:42")).isEqualTo("shm://pid:42");
    }

    @Test
    void shouldRefuseAHostBeyondItsCapOnlyAndTakeEachReleaseBack()
    {
        final UnprovenPeers peers = new UnprovenPeers(2);
        assertThat(peers.reserve("a")).isTrue();
        assertThat(peers.reserve("a")).isTrue();
        assertThat(peers.reserve("a")).as("a's third").isFalse();
        assertThat(peers.reserve("b")).as("another host is not limited by a").isTrue();
        assertThat(peers.size()).isEqualTo(3);
        peers.release("a");
        assertThat(peers.reserve("a")).isTrue();
        peers.release("a");
        peers.release("a");
        peers.release("b");
        assertThat(peers.size()).isZero();
        peers.release("never"); // a release without a reservation changes nothing
        assertThat(peers.size()).isZero();
    }
}
