package io.reverb.rdma.provider.disni;

import java.util.Map;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * A test class extension for suites over {@code rdma://}: counts the emulated device's live objects (ids, QPs, CQs,
 * channels, PDs, registrations) before the class and checks, after it, that every one the class made is gone
 * ({@link RdmaTestDevice#assertEmulatedDeviceBackTo}). On a real device, or none, there is nothing to count.
 */
public final class EmulatedDeviceLeakCheck implements BeforeAllCallback, AfterAllCallback
{
    private static final ExtensionContext.Namespace NAMESPACE =
        ExtensionContext.Namespace.create(EmulatedDeviceLeakCheck.class);

    @Override
    public void beforeAll(final ExtensionContext context)
    {
        context.getStore(NAMESPACE).put("before", RdmaTestDevice.liveEmulatedObjects());
    }

    @Override
    @SuppressWarnings("unchecked")
    public void afterAll(final ExtensionContext context) throws InterruptedException
    {
        RdmaTestDevice.assertEmulatedDeviceBackTo((Map<String, Integer>)context.getStore(NAMESPACE).get("before"));
    }
}
