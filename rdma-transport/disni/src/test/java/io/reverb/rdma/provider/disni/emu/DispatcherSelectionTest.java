package io.reverb.rdma.provider.disni.emu;

import static org.assertj.core.api.Assertions.assertThat;

import com.ibm.disni.verbs.RdmaProvider;
import com.ibm.disni.verbs.impl.NativeDispatcher;
import io.reverb.rdma.provider.disni.RdmaTestDevice;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * How DiSNi's JNI boundary is routed in the rdma:// test JVM: the shadow {@code NativeDispatcher} of the test class
 * path is the one DiSNi calls, it forwards to the emulated device only when selected, and the pass-through to the
 * real libdisni loads DiSNi's own class from the DiSNi jar (which then needs libdisni, as without the shadow).
 */
class DispatcherSelectionTest
{
    @Test
    void shouldRouteDisniThroughTheShadowToTheEmulatedDeviceOnlyWhenSelected() throws Exception
    {
        final String cause = RdmaTestDevice.unavailabilityCause();
        Assumptions.assumeTrue(cause == null, cause);
        RdmaProvider.provider();
        // DiSNi's classes come from its jar, the shadow from the test classes.
        assertThat(NativeDispatcher.class.getProtectionDomain().getCodeSource().getLocation().toString())
            .doesNotContain("disni-2.1.jar");
        assertThat(RdmaProvider.class.getProtectionDomain().getCodeSource().getLocation().toString())
            .contains("disni");
        assertThat(DispatcherBackends.isEmulated()).isEqualTo(RdmaTestDevice.isEmulated());
        assertThat(Boolean.getBoolean(DispatcherBackends.EMULATED_PROP)).isEqualTo(RdmaTestDevice.isEmulated());
    }

    @Test
    void shouldLoadDisnisOwnDispatcherForTheRealDevice()
    {
        // DiSNi's class, defined apart from the shadow: its static initialiser loads libdisni. Here (no libdisni)
        // that fails exactly as DiSNi's own class does, with the UnsatisfiedLinkError DisniAvailability reports.
        try
        {
            final RealDispatcher real = RealDispatcher.load();
            assertThat(real.emulated()).isFalse();
        }
        catch (final UnsatisfiedLinkError ex)
        {
            assertThat(ex.getMessage()).contains("disni");
        }
    }
}
