package io.reverb.rdma.provider.disni;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeFalse;

import io.reverb.rdma.engine.EngineConfig;
import io.reverb.rdma.engine.RdmaEngine;
import io.reverb.rdma.verbs.VerbsConfig;
import io.reverb.rdma.verbs.VerbsProvider;
import io.reverb.rdma.verbs.VerbsProviders;
import java.io.IOException;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The real provider on this machine. Meant for machines without RDMA (CI, laptops): on a host that has
 * both an RDMA device and libdisni these tests are skipped (DisniConformanceTest covers that case).
 */
class DisniVerbsProviderTest
{
    private final DisniVerbsProvider provider = new DisniVerbsProvider();

    @BeforeEach
    void onlyWithoutRdma()
    {
        final boolean hasDevice = !DisniAvailability.listDevices(DisniAvailability.SYSFS_INFINIBAND).isEmpty();
        final boolean hasLibrary = DisniAvailability.findLibrary(
            System.mapLibraryName("disni"), System.getProperty("java.library.path", "")) != null;
        assumeFalse(hasDevice && hasLibrary, "this machine has an RDMA device and libdisni; see DisniConformanceTest");
    }

    @Test
    void shouldNameItselfDisniAndServeTheRdmaScheme()
    {
        assertThat(provider.name()).isEqualTo("disni");
        assertThat(provider.scheme()).isEqualTo("rdma");
    }

    @Test
    void shouldBeUnavailableAndSayWhichPieceIsMissing()
    {
        final boolean hasDevice = !DisniAvailability.listDevices(DisniAvailability.SYSFS_INFINIBAND).isEmpty();

        assertThat(provider.isAvailable()).isFalse();
        final String cause = provider.unavailabilityCause();
        System.out.println("[DisniVerbsProviderTest] unavailabilityCause: " + cause);
        assertThat(cause).startsWith("DiSNi (rdma://) is not available");
        if (hasDevice)
        {
            assertThat(cause).contains("libdisni");
        }
        else
        {
            assertThat(cause).contains("no RDMA device").contains("rdma_rxe");
        }
    }

    @Test
    void shouldCacheTheProbe()
    {
        assertThat(provider.unavailabilityCause()).isSameAs(new DisniVerbsProvider().unavailabilityCause());
    }

    @Test
    void shouldRefuseToOpenWithTheCause()
    {
        assertThatThrownBy(() -> provider.open(VerbsConfig.defaults()))
            .isInstanceOf(IOException.class)
            .hasMessage(provider.unavailabilityCause());
    }

    @Test
    void shouldBeRegisteredWithServiceLoader()
    {
        assertThat(VerbsProviders.all()).anySatisfy(p -> assertThat(p).isInstanceOf(DisniVerbsProvider.class));
    }

    @Test
    void shouldFailRdmaSchemeLookupWithTheCause()
    {
        assertThatThrownBy(() -> VerbsProviders.forScheme("rdma"))
            .isInstanceOf(IllegalArgumentException.class)
            .hasMessageContaining("rdma://")
            .hasMessageContaining("disni: " + provider.unavailabilityCause());
    }

    @Test
    void shouldFailToOpenAnEngineForRdmaWithTheCause()
    {
        // The engine opens rdma:// through VerbsProviders.forScheme: a user sees the provider's cause.
        assertThatThrownBy(() -> RdmaEngine.open("rdma", new EngineConfig()))
            .isInstanceOf(IllegalArgumentException.class)
            .hasMessageContaining(provider.unavailabilityCause());
    }

    @Test
    void shouldNotOfferAnUnavailableProviderForRdmaUris()
    {
        for (final VerbsProvider candidate : VerbsProviders.all())
        {
            if (candidate.scheme().equals("rdma"))
            {
                assertThat(candidate.isAvailable()).isFalse();
            }
        }
    }
}
