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
 * real device loads Reverb's own {@code NativeDispatcher} from the main classes, with the native half bundled there,
 * whose sizes, offsets and JNI version are the ones the emulated device answers ({@link VerbsLayout}).
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
    void shouldLoadReverbsOwnDispatcherAndNativeHalfForTheRealDevice() throws Exception
    {
        // Reverb's class, defined apart from the shadow: its static initialiser loads the bundled native half. That
        // needs rdma-core's runtime libraries only (no device), so it loads here unless they are absent.
        final RealDispatcher real;
        try
        {
            real = RealDispatcher.load();
        }
        catch (final UnsatisfiedLinkError ex)
        {
            // Without rdma-core's runtime libraries, or where this JVM runs on a real device (loaded already).
            assertThat(ex.getMessage()).containsAnyOf("libibverbs.so.1", "librdmacm.so.1", "another classloader");
            return;
        }
        assertThat(real.emulated()).isFalse();
        real.open();
        // One contract: the native half answers what the emulated device answers.
        assertThat(real._getVersion()).isEqualTo(VerbsLayout.JNI_VERSION);
        assertThat(real._getSockAddrInSize()).isEqualTo(VerbsLayout.SOCKADDR_IN_SIZE);
        assertThat(real._getIbvSgeSize()).isEqualTo(VerbsLayout.SGE_SIZE);
        assertThat(real._getIbvRecvWRSize()).isEqualTo(VerbsLayout.RECV_WR_SIZE);
        assertThat(real._getIbvSendWRSize()).isEqualTo(VerbsLayout.SEND_WR_SIZE);
        assertThat(real._getIbvWCSize()).isEqualTo(VerbsLayout.WC_SIZE);
        assertThat(real._getRemoteAddressOffset()).isEqualTo(VerbsLayout.SEND_WR_REMOTE_ADDR);
        assertThat(real._getRKeyOffset()).isEqualTo(VerbsLayout.SEND_WR_RKEY);
    }
}
