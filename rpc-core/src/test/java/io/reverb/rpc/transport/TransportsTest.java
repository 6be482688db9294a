package io.reverb.rpc.transport;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.reverb.rpc.RpcChannel;
import io.reverb.rpc.RpcServer;
import io.reverb.rpc.transport.inproc.InprocTransportProvider;
import org.junit.jupiter.api.Test;

class TransportsTest
{
    @Test
    void shouldFindInprocByScheme()
    {
        assertThat(Transports.providerFor(Transports.parse("inproc://x"))).isInstanceOf(InprocTransportProvider.class);
    }

    @Test
    void shouldNameAvailableSchemesForUnknownScheme()
    {
        assertThatThrownBy(() -> RpcChannel.builder("carrier-pigeon://coop").build())
            .isInstanceOf(IllegalArgumentException.class)
            .hasMessageContaining("no transport for scheme 'carrier-pigeon'")
            .hasMessageContaining("Available schemes: inproc");
        assertThatThrownBy(() -> RpcServer.builder("nope://x").build())
            .hasMessageContaining("Available schemes: inproc");
    }

    @Test
    void shouldRejectAddressWithoutScheme()
    {
        assertThatThrownBy(() -> RpcChannel.builder("just-a-name").build())
            .isInstanceOf(IllegalArgumentException.class)
            .hasMessageContaining("has no scheme");
    }
}
