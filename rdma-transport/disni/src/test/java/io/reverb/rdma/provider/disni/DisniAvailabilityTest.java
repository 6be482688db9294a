package io.reverb.rdma.provider.disni;

import static org.assertj.core.api.Assertions.assertThat;

import com.ibm.disni.verbs.RdmaProvider;
import io.reverb.rdma.provider.disni.nativelib.NativeLibrary;
import java.io.IOException;
import java.io.InputStream;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The availability decision with a fake machine: sysfs, /dev and java.library.path are temp directories,
 * and the native step is a stub.
 */
class DisniAvailabilityTest
{
    private static final String LIBRARY = System.mapLibraryName("disni");

    @TempDir
    Path root;

    private Path sysfs;
    private Path rdmaCm;
    private Path libDir;
    private final AtomicBoolean nativeTouched = new AtomicBoolean();

    @BeforeEach
    void setUp() throws IOException
    {
        sysfs = root.resolve("sys/class/infiniband");
        rdmaCm = root.resolve("dev/infiniband/rdma_cm");
        libDir = Files.createDirectories(root.resolve("lib"));
    }

    @Test
    void shouldReportAbsentDeviceDirectoryWithSoftRoceHint()
    {
        final String cause = probeWithNativeForbidden(libDir.toString());

        assertThat(cause)
            .contains("no RDMA device")
            .contains(sysfs + " is absent")
            .contains("rdma link add rxe0 type rxe netdev");
    }

    @Test
    void shouldReportEmptyDeviceDirectory() throws IOException
    {
        Files.createDirectories(sysfs);

        assertThat(probeWithNativeForbidden(libDir.toString())).contains("no RDMA device").contains("is empty");
    }

    @Test
    void shouldReportMissingRdmaCmDeviceNode() throws IOException
    {
        Files.createDirectories(sysfs.resolve("mlx5_0"));
        Files.createFile(libDir.resolve(LIBRARY));

        assertThat(probeWithNativeForbidden(libDir.toString()))
            .contains("[mlx5_0]")
            .contains(rdmaCm.toString())
            .contains("modprobe rdma_ucm")
            .doesNotContain("no RDMA device");
    }

    @Test
    void shouldReportIwarpOnlyHostsAsUnsupportedWithTheReason() throws IOException
    {
        final Path siw = Files.createDirectories(sysfs.resolve("siw0"));
        Files.writeString(siw.resolve("node_type"), "4: RNIC\n");
        Files.createDirectories(rdmaCm.getParent());
        Files.createFile(rdmaCm);
        Files.createFile(libDir.resolve(LIBRARY));

        assertThat(probeWithNativeForbidden(libDir.toString()))
            .contains("[siw0] are iWARP")
            .contains("no RDMA_WRITE_WITH_IMM")
            .contains("no RNR retry")
            .contains("tcp://");
    }

    @Test
    void shouldAcceptAHostWithRoceBesidesIwarp() throws IOException
    {
        final Path siw = Files.createDirectories(sysfs.resolve("siw0"));
        Files.writeString(siw.resolve("node_type"), "4: RNIC\n");
        final Path rxe = Files.createDirectories(sysfs.resolve("rxe0"));
        Files.writeString(rxe.resolve("node_type"), "1: CA\n");
        Files.createDirectories(rdmaCm.getParent());
        Files.createFile(rdmaCm);
        Files.createFile(libDir.resolve(LIBRARY));

        assertThat(DisniAvailability.probe(sysfs, rdmaCm, libDir.toString(), true, () -> nativeTouched.set(true))).isNull();
        assertThat(nativeTouched).isTrue();
    }

    @Test
    void shouldReportMissingNativeHalfWhenNoneIsBundledNorOnTheLibraryPath() throws IOException
    {
        createDevice();

        final String cause = DisniAvailability.probe(sysfs, rdmaCm, libDir + ":/nonexistent", true, this::forbidden, false);

        assertThat(cause)
            .contains("no native half")
            .contains(LIBRARY + " is not on java.library.path [" + libDir + ":/nonexistent]")
            .contains("librdmacm-dev")
            .doesNotContain("no RDMA device");
        assertThat(nativeTouched).isFalse();
    }

    @Test
    void shouldUseTheBundledNativeHalfWithoutALibdisni() throws IOException
    {
        createDevice();

        final String cause = DisniAvailability.probe(sysfs, rdmaCm, libDir.toString(), true, () -> nativeTouched.set(true),
            true);

        assertThat(cause).isNull();
        assertThat(nativeTouched).isTrue();
    }

    @Test
    void shouldNameRdmaCoresRuntimeLibrariesWhenTheBundledHalfCannotLoad() throws IOException
    {
        createDevice();

        final String cause = DisniAvailability.probe(sysfs, rdmaCm, libDir.toString(), true, () ->
        {
            // What System.load says on a host without rdma-core's runtime libraries.
            throw new UnsatisfiedLinkError("/tmp/reverb-disni-1/libreverb-disni.so: libibverbs.so.1: cannot open " +
                "shared object file: No such file or directory");
        }, true);

        assertThat(cause)
            .contains("the native half bundled in reverb-transport-rdma (libreverb-disni.so) could not be loaded")
            .contains("libibverbs.so.1: cannot open shared object file")
            .contains("apt-get install libibverbs1 librdmacm1");
    }

    @Test
    void shouldReportEveryMissingPieceAtOnce()
    {
        final String cause = DisniAvailability.probe(sysfs, rdmaCm, "", false, this::forbidden, false);

        assertThat(cause)
            .contains("no RDMA device")
            .contains(LIBRARY)
            .contains(DisniAvailability.ADD_EXPORTS);
        assertThat(nativeTouched).isFalse();
    }

    @Test
    void shouldReportMissingExportOfSunNioCh() throws IOException
    {
        createDevice();
        Files.createFile(libDir.resolve(LIBRARY));

        final String cause = DisniAvailability.probe(sysfs, rdmaCm, libDir.toString(), false, this::forbidden);

        assertThat(cause).contains("--add-exports java.base/sun.nio.ch=ALL-UNNAMED");
        assertThat(nativeTouched).isFalse();
    }

    @Test
    void shouldReportLibdisniThatCannotBeLoaded() throws IOException
    {
        createDevice();
        Files.createFile(libDir.resolve(LIBRARY));

        final String cause = DisniAvailability.probe(sysfs, rdmaCm, libDir.toString(), true, () ->
        {
            throw new UnsatisfiedLinkError("librdmacm.so.1: cannot open shared object file");
        });

        assertThat(cause)
            .contains(libDir.resolve(LIBRARY).toString())
            .contains("could not be loaded")
            .contains("librdmacm.so.1: cannot open shared object file")
            .contains("rdma-core");
    }

    @Test
    void shouldReportWrongLibdisniVersion() throws IOException
    {
        createDevice();
        Files.createFile(libDir.resolve(LIBRARY));

        final String cause = DisniAvailability.probe(sysfs, rdmaCm, libDir.toString(), true, () ->
        {
            // What DiSNi 2.1's NativeDispatcher throws when libdisni's _getVersion() differs.
            throw new IOException("jverbs outdated, version found 31, version required 32");
        });

        assertThat(cause)
            .contains("wrong libdisni version")
            .contains("version found 31")
            .contains("JNI version " + DisniAvailability.DISNI_JNI_VERSION)
            .contains("v2.1");
    }

    @Test
    void shouldReportUnopenableRdmaCm() throws IOException
    {
        createDevice();
        Files.createFile(libDir.resolve(LIBRARY));

        final String cause = DisniAvailability.probe(sysfs, rdmaCm, libDir.toString(), true, () ->
        {
            throw new IOException("j2c::createEventChannel: rdma_create_event_channel failed: Permission denied\n");
        });

        assertThat(cause).contains("rdma_cm could not be opened").contains("Permission denied").contains(rdmaCm.toString());
    }

    @Test
    void shouldReportFailedInitialisationInsteadOfThrowing() throws IOException
    {
        createDevice();
        Files.createFile(libDir.resolve(LIBRARY));

        final String cause = DisniAvailability.probe(sysfs, rdmaCm, libDir.toString(), true, () ->
        {
            throw new ExceptionInInitializerError(new IllegalStateException("boom"));
        });

        assertThat(cause).contains("initialising DiSNi failed").contains("boom");
    }

    @Test
    void shouldBeAvailableWhenEveryPieceIsPresent() throws IOException
    {
        createDevice();
        Files.createFile(libDir.resolve(LIBRARY));

        final String cause = DisniAvailability.probe(sysfs, rdmaCm, libDir.toString(), true, () -> nativeTouched.set(true));

        assertThat(cause).isNull();
        assertThat(nativeTouched).isTrue();
    }

    @Test
    void shouldFindLibraryInAnyLibraryPathEntry() throws IOException
    {
        final Path second = Files.createDirectories(root.resolve("other"));
        Files.createFile(second.resolve(LIBRARY));

        assertThat(DisniAvailability.findLibrary(LIBRARY, "::" + libDir + ":" + second)).isEqualTo(second.resolve(LIBRARY));
        assertThat(DisniAvailability.findLibrary(LIBRARY, libDir.toString())).isNull();
    }

    @Test
    void shouldReportDisnisOwnDispatcherFirstOnTheClassPathWithoutALibdisni() throws Exception
    {
        final URL disniJar = RdmaProvider.class.getProtectionDomain().getCodeSource().getLocation();
        final URL reverbClasses = NativeLibrary.class.getProtectionDomain().getCodeSource().getLocation();
        final ClassLoader parent = ClassLoader.getPlatformClassLoader();

        try (URLClassLoader disniFirst = new URLClassLoader(new URL[] {disniJar, reverbClasses}, parent);
             URLClassLoader reverbFirst = new URLClassLoader(new URL[] {reverbClasses, disniJar}, parent))
        {
            assertThat(DisniAvailability.disniDispatcherFirst(disniFirst, libDir.toString()))
                .contains("DiSNi's own NativeDispatcher")
                .contains("put reverb-transport-rdma before com.ibm.disni:disni on the class path");
            assertThat(DisniAvailability.disniDispatcherFirst(reverbFirst, libDir.toString())).isNull();
            // With a libdisni on java.library.path DiSNi's own class works, as it always did.
            Files.createFile(libDir.resolve(LIBRARY));
            assertThat(DisniAvailability.disniDispatcherFirst(disniFirst, libDir.toString())).isNull();
        }
    }

    @Test
    void shouldTellTheDispatchersApartInAShadedJar() throws Exception
    {
        // A shaded application jar: DiSNi's classes and one NativeDispatcher in the same jar (issue 37, seen in the
        // VM with reverb-rdma-check.jar): whose dispatcher it is decides, not where it comes from.
        final Path reverbs = shaded("reverb", NativeLibrary.class);
        final Path disnis = shaded("disni", RdmaProvider.class);
        final ClassLoader parent = ClassLoader.getPlatformClassLoader();

        try (URLClassLoader withReverbs = new URLClassLoader(new URL[] {reverbs.toUri().toURL()}, parent);
             URLClassLoader withDisnis = new URLClassLoader(new URL[] {disnis.toUri().toURL()}, parent))
        {
            assertThat(DisniAvailability.disniDispatcherFirst(withReverbs, libDir.toString())).isNull();
            assertThat(DisniAvailability.disniDispatcherFirst(withDisnis, libDir.toString()))
                .contains("DiSNi's own NativeDispatcher");
        }
    }

    /** A directory holding DiSNi's RdmaProvider and the NativeDispatcher found next to {@code besides}. */
    private Path shaded(final String name, final Class<?> besides) throws Exception
    {
        final Path dir = root.resolve(name);
        copy(RdmaProvider.class, "com/ibm/disni/verbs/RdmaProvider.class", dir);
        copy(besides, DisniAvailability.DISPATCHER_CLASS_FILE, dir);
        return dir;
    }

    private static void copy(final Class<?> besides, final String file, final Path dir) throws Exception
    {
        final URL location = besides.getProtectionDomain().getCodeSource().getLocation();
        final URL entry = location.getPath().endsWith(".jar") ? new URL("jar:" + location + "!/" + file) :
            new URL(location, file);
        final Path target = dir.resolve(file);
        Files.createDirectories(target.getParent());
        try (InputStream in = entry.openStream())
        {
            Files.copy(in, target);
        }
    }

    @Test
    void shouldRunThisModulesTestsWithTheExportDisniNeeds()
    {
        // rdma-transport's Surefire argLine carries it, so DisniConformanceTest can run on RDMA hosts.
        assertThat(DisniAvailability.sunNioChExportedToDisni()).isTrue();
    }

    private String probeWithNativeForbidden(final String libraryPath)
    {
        final String cause = DisniAvailability.probe(sysfs, rdmaCm, libraryPath, true, this::forbidden);
        assertThat(nativeTouched).as("native code must not be touched while a piece is missing").isFalse();
        return cause;
    }

    private void forbidden()
    {
        nativeTouched.set(true);
        throw new AssertionError("native probe must not run");
    }

    private void createDevice() throws IOException
    {
        Files.createDirectories(sysfs.resolve("rxe0"));
        Files.createDirectories(rdmaCm.getParent());
        Files.createFile(rdmaCm);
    }
}
