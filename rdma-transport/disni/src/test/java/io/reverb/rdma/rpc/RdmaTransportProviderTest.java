package io.reverb.rdma.rpc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.reverb.rdma.verbs.VerbsProvider;
import io.reverb.rdma.verbs.VerbsProviders;
import io.reverb.rpc.RpcChannel;
import io.reverb.rpc.transport.TransportProvider;
import io.reverb.rpc.transport.Transports;
import org.junit.jupiter.api.Test;

/**
 * {@code rdma://} is registered as an rpc transport and reports the DiSNi provider's availability.
 * Calls over it need RDMA hardware (see the README); here only the reporting is tested.
 */
class RdmaTransportProviderTest
{
    private static VerbsProvider disni()
    {
        return VerbsProviders.all().stream().filter(p -> p.scheme().equals("rdma")).findFirst().orElseThrow();
    }

    @Test
    void shouldRegisterRdmaSchemeAsAnRpcTransport()
    {
        final boolean registered = Transports.providers().stream()
            .anyMatch(p -> p instanceof RdmaTransportProvider && p.scheme().equals("rdma"));
        assertThat(registered).isTrue();
    }

    @Test
    void shouldReportTheVerbsProvidersAvailabilityAndCause()
    {
        final TransportProvider rdma = new RdmaTransportProvider();
        final VerbsProvider verbs = disni();
        assertThat(rdma.isAvailable()).isEqualTo(verbs.isAvailable());
        if (!verbs.isAvailable())
        {
            assertThat(rdma.unavailabilityCause()).contains(verbs.unavailabilityCause());
        }
    }

    @Test
    void shouldFailToBuildAChannelWithTheCauseWhenRdmaIsUnavailable()
    {
        final VerbsProvider verbs = disni();
        if (verbs.isAvailable())
        {
            System.out.println("[RdmaTransportProviderTest] rdma:// is available here: the unavailable path is not exercised");
            return;
        }
        assertThatThrownBy(() -> RpcChannel.builder("rdma://127.0.0.1:7000").build())
            .hasMessageContaining("rdma")
            .hasMessageContaining(verbs.unavailabilityCause());
    }
}
