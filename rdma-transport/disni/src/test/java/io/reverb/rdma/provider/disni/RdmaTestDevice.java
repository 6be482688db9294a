package io.reverb.rdma.provider.disni;

import io.reverb.rdma.provider.disni.emu.DispatcherBackends;
import io.reverb.rdma.provider.disni.emu.EmulatedFabric;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;

/**
 * Decides, once per test JVM, what the rdma:// tests run on: the real RDMA device when this host has one
 * (and libdisni), else the emulated device of the test class path ({@code io.reverb.rdma.provider.disni.emu})
 * when the system property {@value #EMULATION_PROP} is true (the {@code rdma-emulated} Surefire execution of
 * this module sets it), else nothing: the tests skip with the real cause. The emulation is never chosen on a
 * host with a usable device, and never without being asked for.
 */
public final class RdmaTestDevice
{
    /**
     * JUnit tag of the tests that need the emulated device (several devices in one JVM, or its object counts):
     * excluded over a real device (DisniConformanceMain, RdmaSuitesMain), where they would only skip.
     */
    public static final String EMULATION_ONLY_TAG = "emulation-only";

    /** System property: "true" lets the rdma:// tests fall back to the emulated device. */
    public static final String EMULATION_PROP = "reverb.test.rdma.emulation";
    /** The address contexts open by default over the emulated device (each 127.x.y.z address is one host). */
    public static final String EMULATED_HOST = "127.0.0.1";

    private static boolean decided;
    private static boolean emulated;
    private static String cause;

    private RdmaTestDevice()
    {
    }

    /** @return null when rdma:// can run in this JVM (real or emulated), otherwise why not. */
    public static synchronized String unavailabilityCause()
    {
        if (!decided)
        {
            decided = true;
            final String real = DisniAvailability.probeThisMachine();
            if (real == null)
            {
                cause = null;
                System.out.println("[rdma tests] running over the REAL RDMA device");
            }
            else if (Boolean.getBoolean(EMULATION_PROP))
            {
                System.setProperty(DispatcherBackends.EMULATED_PROP, "true");
                if (System.getProperty(DisniVerbsProvider.LOCAL_ADDRESS_PROP) == null)
                {
                    System.setProperty(DisniVerbsProvider.LOCAL_ADDRESS_PROP, EMULATED_HOST);
                }
                DisniVerbsProvider.overrideAvailability(null);
                emulated = true;
                cause = null;
                System.out.println("[rdma tests] no usable RDMA device here (" + real + "): running over the EMULATED " +
                    "device (DiSNi's Java half over a Java model of libdisni, rdma-core and an RC NIC; see RDMA-HARDWARE.md)");
            }
            else
            {
                cause = real;
                System.out.println("[rdma tests] skipped, rdma:// cannot run here: " + real + " (or run them over the " +
                    "emulated device: -D" + EMULATION_PROP + "=true, as the build's rdma-emulated execution does)");
            }
        }
        return cause;
    }

    /**
     * @return the IPv4 address rdma:// contexts open in this JVM ({@value DisniVerbsProvider#LOCAL_ADDRESS_PROP}, by
     *         default {@value #EMULATED_HOST}); skips the calling test, with the cause, where rdma:// cannot run.
     */
    public static String hostOrSkip()
    {
        final String cause = unavailabilityCause();
        Assumptions.assumeTrue(cause == null, cause);
        return System.getProperty(DisniVerbsProvider.LOCAL_ADDRESS_PROP, EMULATED_HOST);
    }

    /** @return whether the rdma:// tests of this JVM run over the emulated device. */
    public static synchronized boolean isEmulated()
    {
        unavailabilityCause();
        return emulated;
    }

    /**
     * Over the emulated device: waits (at most 20 s: some teardown finishes on rdma_cm and CQ event threads) until
     * it holds no more rdma_cm ids, QPs, CQs, channels, PDs and memory registrations than {@code baseline} (taken
     * before the test class opened anything; a JVM-wide rpc transport may hold some of its own), and fails naming
     * what is left. Does nothing over a real device.
     *
     * @param baseline {@link #liveEmulatedObjects()} before.
     * @throws InterruptedException if interrupted while waiting.
     */
    public static void assertEmulatedDeviceBackTo(final Map<String, Integer> baseline) throws InterruptedException
    {
        final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        Map<String, Integer> live = liveEmulatedObjects();
        while (!atMost(live, baseline))
        {
            if (System.nanoTime() - deadline > 0)
            {
                throw new AssertionError("the emulated RDMA device holds " + live + " after every engine closed, " +
                    baseline + " before");
            }
            Thread.sleep(10);
            live = liveEmulatedObjects();
        }
    }

    private static boolean atMost(final Map<String, Integer> live, final Map<String, Integer> baseline)
    {
        for (final Map.Entry<String, Integer> entry : live.entrySet())
        {
            if (entry.getValue() > baseline.getOrDefault(entry.getKey(), 0))
            {
                return false;
            }
        }
        return true;
    }

    /**
     * @return the emulated device's live objects by kind (all zero once every context is closed); empty when
     *         not emulated.
     */
    public static Map<String, Integer> liveEmulatedObjects()
    {
        return isEmulated() && DispatcherBackends.isEmulated() ? EmulatedFabric.instance().liveObjects() : Map.of();
    }

    /** @return bytes the emulated device has registered (pinned, on a real one), or -1 when not emulated. */
    public static long emulatedRegisteredBytes()
    {
        return isEmulated() && DispatcherBackends.isEmulated() ? EmulatedFabric.instance().registeredBytes() : -1;
    }
}
