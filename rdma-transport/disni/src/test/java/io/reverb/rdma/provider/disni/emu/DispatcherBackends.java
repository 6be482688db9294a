package io.reverb.rdma.provider.disni.emu;

/**
 * Chooses, once per JVM, what the test-scope {@code NativeDispatcher} forwards to.
 */
public final class DispatcherBackends
{
    /**
     * System property: "true" makes DiSNi run over the emulated device. Set only by the test helper
     * {@code io.reverb.rdma.provider.disni.RdmaTestDevice} (and by the Surefire execution that runs the rdma://
     * suites), and only on a host without a usable RDMA device.
     */
    public static final String EMULATED_PROP = "reverb.disni.emulated";

    private static volatile DispatcherBackend selected;

    private DispatcherBackends()
    {
    }

    /**
     * @return the backend: the emulated device if {@value #EMULATED_PROP} is true when DiSNi first loads, else
     *         the real libdisni (which fails to load where it is absent, as without this class).
     */
    public static synchronized DispatcherBackend select()
    {
        if (selected == null)
        {
            selected = Boolean.getBoolean(EMULATED_PROP) ? new EmulatedDispatcher(EmulatedFabric.instance()) :
                RealDispatcher.load();
        }
        return selected;
    }

    /** @return whether DiSNi in this JVM runs over the emulated device (false also before DiSNi loaded). */
    public static boolean isEmulated()
    {
        final DispatcherBackend backend = selected;
        return backend != null && backend.emulated();
    }
}
