package io.reverb.rdma.provider.disni;

import com.ibm.disni.verbs.RdmaEventChannel;
import com.ibm.disni.verbs.RdmaProvider;
import io.reverb.rdma.provider.disni.nativelib.NativeLibrary;
import java.io.IOException;
import java.io.InputStream;
import java.net.URL;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;

/**
 * Decides whether DiSNi can run here, and if not, says what is missing and how to fix it.
 *
 * <p>Everything that can be checked without native code is checked first (an RDMA device in sysfs,
 * the rdma_cm device node, a native half: the one bundled in this jar or a libdisni on
 * {@code java.library.path}, DiSNi's classes), so that a machine without RDMA never loads native code at all.
 * Only when all of that is present is the native half loaded (see {@link NativeLibrary}): that fails with the
 * loader's message when rdma-core's runtime libraries are missing; {@code NativeDispatcher} then compares the
 * library's JNI version with the one DiSNi's Java half needs ({@value #DISNI_JNI_VERSION} for DiSNi 2.1) and
 * throws "jverbs outdated" on a mismatch (only a user's libdisni can differ); finally an rdma_cm event channel
 * is opened and closed, which catches a device node the user may not open. No step blocks.
 */
final class DisniAvailability
{
    /** The JNI version DiSNi 2.1's Java half requires of libdisni ({@code NativeDispatcher.JVERBS_VERSION}). */
    static final int DISNI_JNI_VERSION = 32;
    /** Where the kernel lists RDMA devices. */
    static final Path SYSFS_INFINIBAND = Paths.get("/sys/class/infiniband");
    /** rdma_cm's character device (module rdma_ucm). */
    static final Path RDMA_CM_DEVICE = Paths.get("/dev/infiniband/rdma_cm");

    /** The class file of DiSNi's JNI boundary, DiSNi's or Reverb's. */
    static final String DISPATCHER_CLASS_FILE = "com/ibm/disni/verbs/impl/NativeDispatcher.class";
    /** What only Reverb's NativeDispatcher class file holds: the name of the loader it calls (a constant-pool entry). */
    private static final byte[] REVERB_DISPATCHER_MARK =
        NativeLibrary.class.getName().replace('.', '/').getBytes(StandardCharsets.US_ASCII);

    /** How every unavailability cause starts. */
    static final String CAUSE_PREFIX = "DiSNi (rdma://) is not available: ";

    /** The JVM option DiSNi 2.1 needs on Java 9+. */
    static final String ADD_EXPORTS = "--add-exports java.base/sun.nio.ch=ALL-UNNAMED";

    /** What the native half needs at run time (it links against these). */
    static final String RUNTIME_HINT =
        "install rdma-core's runtime libraries libibverbs.so.1 and librdmacm.so.1 (Debian/Ubuntu: apt-get install " +
        "libibverbs1 librdmacm1 ibverbs-providers; RHEL/Fedora: dnf install rdma-core libibverbs librdmacm; " +
        "see rdma-transport/RDMA-HARDWARE.md)";
    static final String DEVICE_HINT =
        "load your RDMA NIC's driver (check with ibv_devices), or try Soft-RoCE: " +
        "sudo modprobe rdma_rxe && sudo rdma link add rxe0 type rxe netdev eth0";

    /** What is loaded once every file-level check passed: libdisni and rdma_cm. */
    @FunctionalInterface
    interface NativeProbe
    {
        /**
         * @throws Throwable whatever loading or the version check throws.
         */
        void probe() throws Throwable;
    }

    private DisniAvailability()
    {
    }

    /**
     * Probes this machine.
     *
     * @return null when DiSNi can run, otherwise the cause.
     */
    static String probeThisMachine()
    {
        if (!classesPresent())
        {
            return "DiSNi's classes are not on the class path: add the dependency com.ibm.disni:disni:2.1";
        }
        final String libraryPath = System.getProperty("java.library.path", "");
        final String shadowed = disniDispatcherFirst(DisniAvailability.class.getClassLoader(), libraryPath);
        if (shadowed != null)
        {
            return CAUSE_PREFIX + shadowed;
        }
        return probe(
            SYSFS_INFINIBAND,
            RDMA_CM_DEVICE,
            libraryPath,
            sunNioChExportedToDisni(),
            DisniAvailability::loadDisniAndOpenRdmaCm);
    }

    /**
     * @param loader      the class loader DiSNi's classes come from.
     * @param libraryPath {@code java.library.path}.
     * @return why DiSNi's own {@code NativeDispatcher} (which only loads a libdisni from {@code java.library.path})
     *         cannot run when it came before Reverb's on the class path and there is no libdisni; otherwise null.
     */
    static String disniDispatcherFirst(final ClassLoader loader, final String libraryPath)
    {
        // By content, not by jar: a shaded application jar holds DiSNi's classes and Reverb's dispatcher together.
        final URL dispatcher = loader.getResource(DISPATCHER_CLASS_FILE);
        if (dispatcher == null || findLibrary(System.mapLibraryName("disni"), libraryPath) != null)
        {
            return null;
        }
        try (InputStream in = dispatcher.openStream())
        {
            if (contains(in.readAllBytes(), REVERB_DISPATCHER_MARK))
            {
                return null;
            }
        }
        catch (final IOException | SecurityException ex)
        {
            return null; // unreadable: loading will tell
        }
        return "DiSNi's own NativeDispatcher (" + dispatcher + ") comes before reverb-transport-rdma's on the class " +
            "path, and it needs a libdisni on java.library.path, which is absent: put reverb-transport-rdma " +
            "before com.ibm.disni:disni on the class path (Maven and Gradle do, unless disni is declared first), or " +
            "leave DiSNi's NativeDispatcher out of a shaded jar, so that the bundled native half is used";
    }

    private static boolean contains(final byte[] haystack, final byte[] needle)
    {
        outer:
        for (int i = 0; i + needle.length <= haystack.length; i++)
        {
            for (int j = 0; j < needle.length; j++)
            {
                if (haystack[i + j] != needle[j])
                {
                    continue outer;
                }
            }
            return true;
        }
        return false;
    }

    /**
     * The decision, with every input injected so that it is tested without RDMA.
     *
     * @param sysfsInfiniband directory that lists RDMA devices.
     * @param rdmaCmDevice    rdma_cm device node.
     * @param libraryPath     {@code java.library.path}.
     * @param sunNioChExported whether {@code sun.nio.ch} is exported to DiSNi's module ({@link #ADD_EXPORTS}).
     * @param nativeProbe     run only when the file checks pass.
     * @return null when available, otherwise the cause.
     */
    static String probe(
        final Path sysfsInfiniband,
        final Path rdmaCmDevice,
        final String libraryPath,
        final boolean sunNioChExported,
        final NativeProbe nativeProbe)
    {
        return probe(sysfsInfiniband, rdmaCmDevice, libraryPath, sunNioChExported, nativeProbe,
            NativeLibrary.bundledResource() != null);
    }

    /**
     * The decision, with every input injected.
     *
     * @param sysfsInfiniband directory that lists RDMA devices.
     * @param rdmaCmDevice    rdma_cm device node.
     * @param libraryPath     {@code java.library.path}.
     * @param sunNioChExported whether {@code sun.nio.ch} is exported to DiSNi's module ({@link #ADD_EXPORTS}).
     * @param nativeProbe     run only when the file checks pass.
     * @param bundled         whether this jar carries a native half for this platform.
     * @return null when available, otherwise the cause.
     */
    static String probe(
        final Path sysfsInfiniband,
        final Path rdmaCmDevice,
        final String libraryPath,
        final boolean sunNioChExported,
        final NativeProbe nativeProbe,
        final boolean bundled)
    {
        final List<String> missing = new ArrayList<>();
        final List<String> devices = listDevices(sysfsInfiniband);
        if (devices.isEmpty())
        {
            missing.add("no RDMA device (" + sysfsInfiniband + " is " +
                (Files.isDirectory(sysfsInfiniband) ? "empty" : "absent") + "): " + DEVICE_HINT);
        }
        else if (allIwarp(sysfsInfiniband, devices))
        {
            missing.add("RDMA device(s) " + devices + " are iWARP (sysfs node_type " +
                RdmaDevices.NODE_TYPE_RNIC + ": RNIC): " + RdmaDevices.IWARP_REASON);
        }
        else if (!Files.exists(rdmaCmDevice))
        {
            missing.add("RDMA device(s) " + devices + " found but " + rdmaCmDevice +
                " is missing: sudo modprobe rdma_ucm (rdma-core's udev rules give it mode 0666)");
        }

        if (!sunNioChExported)
        {
            missing.add("DiSNi 2.1 reads direct-buffer addresses through sun.nio.ch.DirectBuffer, which Java 17 " +
                "hides: start the JVM with " + ADD_EXPORTS);
        }

        final String libraryName = System.mapLibraryName("disni");
        final Path library = findLibrary(libraryName, libraryPath);
        if (library == null && !bundled)
        {
            missing.add("no native half: " + NativeLibrary.noLibraryCause(libraryPath) + ": use a build of " +
                "reverb-transport-rdma made on Linux with rdma-core's headers (libibverbs-dev, librdmacm-dev)");
        }
        final String nativeHalf = library != null ? library.toString() :
            "the native half bundled in reverb-transport-rdma (" + NativeLibrary.BUNDLED_NAME + ")";

        if (!missing.isEmpty())
        {
            return CAUSE_PREFIX + String.join("; ", missing);
        }

        try
        {
            nativeProbe.probe();
            return null;
        }
        catch (final UnsatisfiedLinkError ex)
        {
            return CAUSE_PREFIX + nativeHalf + " could not be loaded (" + ex.getMessage() + "); it needs " +
                "libibverbs.so.1 and librdmacm.so.1: " + RUNTIME_HINT;
        }
        catch (final IOException ex)
        {
            final String message = String.valueOf(ex.getMessage());
            if (message.contains("outdated") || message.contains("version"))
            {
                return CAUSE_PREFIX + "wrong libdisni version at " + nativeHalf + " (" + message.trim() +
                    "); the DiSNi 2.1 jar needs JNI version " + DISNI_JNI_VERSION + ": remove that libdisni from " +
                    "java.library.path to use the native half bundled in reverb-transport-rdma, or build DiSNi's " +
                    "v2.1 tag";
            }
            return CAUSE_PREFIX + "rdma_cm could not be opened (" + message.trim() + "); check that " +
                rdmaCmDevice + " is readable and writable by this user (rdma-core's udev rules) and that the locked " +
                "memory limit (ulimit -l) is large enough";
        }
        catch (final ExceptionInInitializerError | NoClassDefFoundError ex)
        {
            final Throwable cause = ex.getCause() != null ? ex.getCause() : ex;
            return CAUSE_PREFIX + "initialising DiSNi failed (" + cause + "); " + RUNTIME_HINT;
        }
        catch (final Throwable ex)
        {
            return CAUSE_PREFIX + "probing DiSNi failed (" + ex + ")";
        }
    }

    /**
     * @param sysfsInfiniband directory.
     * @return device names, empty if none or unreadable.
     */
    static List<String> listDevices(final Path sysfsInfiniband)
    {
        final List<String> devices = new ArrayList<>();
        if (!Files.isDirectory(sysfsInfiniband))
        {
            return devices;
        }
        try (DirectoryStream<Path> stream = Files.newDirectoryStream(sysfsInfiniband))
        {
            for (final Path device : stream)
            {
                devices.add(device.getFileName().toString());
            }
        }
        catch (final IOException | SecurityException ex)
        {
            // unreadable counts as absent; the cause text names the directory
        }
        devices.sort(null);
        return devices;
    }

    private static boolean allIwarp(final Path sysfsInfiniband, final List<String> devices)
    {
        for (final String device : devices)
        {
            if (!RdmaDevices.read(sysfsInfiniband.resolve(device)).isIwarp())
            {
                return false;
            }
        }
        return true;
    }

    /**
     * @param libraryName e.g. {@code libdisni.so}.
     * @param libraryPath path-separator separated directories.
     * @return the first match, or null.
     */
    static Path findLibrary(final String libraryName, final String libraryPath)
    {
        return NativeLibrary.findLibrary(libraryName, libraryPath);
    }


    /** @return whether DiSNi's (class path) module may use {@code sun.nio.ch.DirectBuffer}. */
    static boolean sunNioChExportedToDisni()
    {
        try
        {
            final Module disni = Class.forName(
                "com.ibm.disni.util.MemoryUtils", false, DisniAvailability.class.getClassLoader()).getModule();
            return ByteBuffer.class.getModule().isExported("sun.nio.ch", disni);
        }
        catch (final ClassNotFoundException | LinkageError ex)
        {
            return false;
        }
    }

    private static boolean classesPresent()
    {
        try
        {
            Class.forName("com.ibm.disni.verbs.RdmaProvider", false, DisniAvailability.class.getClassLoader());
            return true;
        }
        catch (final ClassNotFoundException | LinkageError ex)
        {
            return false;
        }
    }

    static void loadDisniAndOpenRdmaCm() throws IOException
    {
        // Loads the native half (NativeDispatcher's static initialiser) and checks its JNI version.
        RdmaProvider.provider();
        final RdmaEventChannel channel = RdmaEventChannel.createEventChannel();
        if (channel == null)
        {
            throw new IOException("rdma_create_event_channel failed");
        }
        channel.destroyEventChannel();
    }
}
