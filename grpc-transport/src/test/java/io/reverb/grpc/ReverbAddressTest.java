package io.reverb.grpc;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.InetSocketAddress;
import java.net.SocketAddress;
import org.junit.jupiter.api.Test;

/**
 * The client's address as server code sees it: an {@link InetSocketAddress} for an IP transport's peer named by an IP
 * literal (never a name lookup), the transport's own address for anything else.
 */
class ReverbAddressTest
{
    @Test
    void shouldGiveAnInetSocketAddressForAnIpLiteralOfAnIpTransport()
    {
        assertInet(ReverbAddress.ofPeer("tcp://10.0.0.7:52100"), "10.0.0.7", 52100);
        assertInet(ReverbAddress.ofPeer("10.0.0.7:52100"), "10.0.0.7", 52100);
        assertInet(ReverbAddress.ofPeer("rdma://192.168.1.2:7471"), "192.168.1.2", 7471);
        assertInet(ReverbAddress.ofPeer("TCP://127.0.0.1:0"), "127.0.0.1", 0);
        assertInet(ReverbAddress.ofPeer("[::1]:9000"), "0:0:0:0:0:0:0:1", 9000);
        assertInet(ReverbAddress.ofPeer("tcp://[fe80::1:2]:9000"), "fe80:0:0:0:0:0:1:2", 9000);
    }

    @Test
    void shouldKeepTheTransportsOwnAddressForAnythingElse()
    {
        for (final String other : new String[] {
            "shm://pid:42", "inproc://grpc-test", "tcp://server.example:7000", "tcp://999.1.1.1:7000",
            "tcp://10.0.0.7:65536", "tcp://10.0.0.7:", "tcp://10.0.0.7", "tcp://10.0.0.7:80a", ":80", "tcp://[nothex]:80",
            "tcp://[::1:80", "1.2.3:80", "?"})
        {
            final SocketAddress address = ReverbAddress.ofPeer(other);
            assertThat(address).as(other).isInstanceOf(ReverbAddress.class);
            assertThat(((ReverbAddress)address).uri()).isEqualTo(other);
        }
    }

    private static void assertInet(final SocketAddress address, final String ip, final int port)
    {
        assertThat(address).isInstanceOf(InetSocketAddress.class);
        final InetSocketAddress inet = (InetSocketAddress)address;
        assertThat(inet.isUnresolved()).isFalse();
        assertThat(inet.getAddress().getHostAddress()).isEqualTo(ip);
        assertThat(inet.getPort()).isEqualTo(port);
    }
}
