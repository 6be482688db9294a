package io.reverb.rdma.provider.disni;

import io.reverb.rdma.provider.disni.emu.EmulatedFabric;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Stream;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * A test class extension for suites written for every fabric and run here over {@code rdma://}: after the class it
 * checks that their traffic really went through an RDMA device, so that a suite which silently ran over shm or tcp
 * (a wrong address, a fallback) fails instead of counting as an rdma:// run. Over the emulated device it counts the
 * RC connections the class established ({@link EmulatedFabric#connectionsEstablished()}); over a real device the
 * packets its ports sent (sysfs {@code hw_counters/sent_pkts} or {@code counters/port_xmit_packets}), or, where no
 * counter is readable, says so and checks nothing. Where rdma:// cannot run at all the class's tests skip with the
 * cause and there is nothing to check.
 */
public final class RdmaTrafficCheck implements BeforeAllCallback, AfterAllCallback
{
    private static final ExtensionContext.Namespace NAMESPACE = ExtensionContext.Namespace.create(RdmaTrafficCheck.class);
    private static final Path SYSFS = Path.of("/sys/class/infiniband");

    @Override
    public void beforeAll(final ExtensionContext context)
    {
        context.getStore(NAMESPACE).put("before", count());
    }

    @Override
    public void afterAll(final ExtensionContext context)
    {
        assertTrafficSince(context.getRequiredTestClass().getSimpleName(), (Long)context.getStore(NAMESPACE).get("before"));
    }

    /**
     * For a JUnit 4 class (no extensions there): its {@code @BeforeClass} takes this, its {@code @AfterClass} passes it
     * to {@link #assertTrafficSince}.
     *
     * @return the traffic counter of the device the suites run on, or -1 when there is none to read.
     */
    public static long traffic()
    {
        return count();
    }

    /**
     * What {@link #afterAll} checks, for a class that took {@link #traffic()} before its tests.
     *
     * @param name   the test class's name, for the messages.
     * @param before {@link #traffic()} before the class ran.
     */
    public static void assertTrafficSince(final String name, final long before)
    {
        if (RdmaTestDevice.unavailabilityCause() != null)
        {
            return;
        }
        final long after = count();
        if (before < 0 || after < 0)
        {
            System.out.println("[rdma tests] " + name + ": no RDMA port counter is readable under " + SYSFS +
                ": not checked that its traffic went over rdma");
            return;
        }
        if (after <= before)
        {
            throw new AssertionError(name + " ran without any traffic over the " +
                (RdmaTestDevice.isEmulated() ? "emulated RDMA device (no RC connection established)" :
                "RDMA device (its ports sent no packet)") + ": its calls did not go over rdma://");
        }
        System.out.println("[rdma tests] " + name + ": " + (after - before) +
            (RdmaTestDevice.isEmulated() ? " RC connections established over the emulated device" :
            " packets sent by the RDMA ports"));
    }

    /** @return the traffic counter of the device the suites run on, or -1 when there is none to read. */
    private static long count()
    {
        if (RdmaTestDevice.unavailabilityCause() != null)
        {
            return -1;
        }
        if (RdmaTestDevice.isEmulated())
        {
            return EmulatedFabric.instance().connectionsEstablished();
        }
        long packets = 0;
        boolean read = false;
        try (Stream<Path> devices = Files.list(SYSFS))
        {
            for (final Path device : (Iterable<Path>)devices::iterator)
            {
                try (Stream<Path> ports = Files.list(device.resolve("ports")))
                {
                    for (final Path port : (Iterable<Path>)ports::iterator)
                    {
                        for (final String counter : new String[] {"hw_counters/sent_pkts", "counters/port_xmit_packets"})
                        {
                            try
                            {
                                packets += Long.parseLong(Files.readString(port.resolve(counter)).trim());
                                read = true;
                                break;
                            }
                            catch (final IOException | NumberFormatException | UnsupportedOperationException ignored)
                            {
                                // not this counter on this driver: the next one
                            }
                        }
                    }
                }
            }
        }
        catch (final IOException ex)
        {
            return -1;
        }
        return read ? packets : -1;
    }
}
