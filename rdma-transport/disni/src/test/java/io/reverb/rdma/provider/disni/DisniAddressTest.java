package io.reverb.rdma.provider.disni;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.net.InetSocketAddress;
import org.junit.jupiter.api.Test;

class DisniAddressTest
{
    @Test
    void shouldParseIpv4HostAndPort()
    {
        final InetSocketAddress address = DisniAddress.parse("192.168.1.10:7000");

        assertThat(address.getAddress().getHostAddress()).isEqualTo("192.168.1.10");
        assertThat(address.getPort()).isEqualTo(7000);
        assertThat(DisniAddress.format(address)).isEqualTo("192.168.1.10:7000");
    }

    @Test
    void shouldAcceptPortZeroForListening()
    {
        assertThat(DisniAddress.parse("10.0.0.1:0").getPort()).isZero();
    }

    @Test
    void shouldResolveHostNamesToIpv4()
    {
        assertThat(DisniAddress.parse("localhost:1").getAddress().getAddress()).hasSize(4);
    }

    @Test
    void shouldRejectMalformedAddresses()
    {
        assertThatThrownBy(() -> DisniAddress.parse("10.0.0.1")).hasMessageContaining("host:port");
        assertThatThrownBy(() -> DisniAddress.parse(":7000")).hasMessageContaining("host:port");
        assertThatThrownBy(() -> DisniAddress.parse("10.0.0.1:")).hasMessageContaining("host:port");
        assertThatThrownBy(() -> DisniAddress.parse("10.0.0.1:x")).hasMessageContaining("port is not a number");
        assertThatThrownBy(() -> DisniAddress.parse("10.0.0.1:65536")).hasMessageContaining("0..65535");
        assertThatThrownBy(() -> DisniAddress.parse("")).hasMessageContaining("host:port");
    }

    @Test
    void shouldRejectIpv6BecauseDisniIsAfInetOnly()
    {
        assertThatThrownBy(() -> DisniAddress.parse("[::1]:7000")).hasMessageContaining("IPv6");
        assertThatThrownBy(() -> DisniAddress.parse("fe80::1:7000")).hasMessageContaining("host:port");
    }
}
