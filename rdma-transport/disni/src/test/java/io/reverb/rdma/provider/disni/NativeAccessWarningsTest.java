package io.reverb.rdma.provider.disni;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.reverb.common.counters.ProcessCounters;
import io.reverb.rdma.provider.disni.nativelib.NativeLibrary;
import io.reverb.rdma.verbs.VerbsConfig;
import io.reverb.rpc.testing.Jdks;
import java.io.File;
import java.io.IOException;
import java.io.OutputStream;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.jar.Attributes;
import java.util.jar.JarOutputStream;
import java.util.jar.Manifest;
import java.util.stream.Collectors;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What a user on JDK 24+ sees on stderr (JEP 472 restricted methods, JEP 471/498 {@code sun.misc.Unsafe}): a child JVM
 * makes a {@code shm://} call and runs the {@code rdma://} native loader ({@code System.load} in Reverb's
 * {@code NativeDispatcher}). With native access enabled, by {@code --enable-native-access=ALL-UNNAMED} or by
 * {@code Enable-Native-Access: ALL-UNNAMED} in an executable jar's manifest (as Reverb's own executable jars carry),
 * no warning line names a Reverb class; without it the JDK names Reverb's dispatcher, which shows the check sees the
 * warning it looks for. Warnings about other libraries' classes are printed for the record, not failed on (the
 * user's guide names the flag that silences each).
 *
 * <p>Before JDK 24 nothing of this is printed: on an older JVM the children run on a JDK 24+ found beside it
 * ({@link Jdks}: Temurin 25 under {@code /usr/lib/jvm} here), and the test is skipped, with the cause, where there is none.
 */
class NativeAccessWarningsTest
{
    private static final long CHILD_TIMEOUT_SECONDS = 120;
    private static final String DISPATCHER = MainDispatcherClass.NAME;
    /** How the JDK starts each line of its restricted-method and sun.misc.Unsafe warnings. */
    private static final String JDK_WARNING = "WARNING:";

    @TempDir
    Path dir;

    /** The child JVMs' {@code java}: a JDK 24+, this one or one found beside it ({@link Jdks}). */
    private Path childJava;

    @BeforeEach
    void requireJdk24AndTheNativeHalf()
    {
        childJava = Jdks.javaAtLeast(24);
        final String cause = "restricted-method and sun.misc.Unsafe warnings (JEP 472 and 498) start in Java 24: " +
            Jdks.noneFound(24);
        if (childJava == null)
        {
            System.out.println("NativeAccessWarningsTest skipped: " + cause);
        }
        assumeTrue(childJava != null, cause);
        assumeTrue(NativeLibrary.bundledResource() != null,
            "no native half in the main classes (built with -Dreverb.native.skip=true, or not Linux x86_64/aarch64)");
    }

    @Test
    void withoutNativeAccessTheJdkShouldNameReverbsDispatcherAsTheCallerOfSystemLoad() throws Exception
    {
        final List<String> command = java();
        command.addAll(List.of("-cp", childClassPath().stream().map(Path::toString)
            .collect(Collectors.joining(File.pathSeparator)), NativeAccessWarningsChild.class.getName(), shmAddress()));

        final List<String> stderr = run(command);

        assertThat(reverbWarnings(stderr)).as("stderr:\n%s", String.join("\n", stderr))
            .anyMatch(line -> line.contains("System::load") && line.contains(DISPATCHER));
    }

    @Test
    void enableNativeAccessFlagShouldLeaveNoWarningFromReverb() throws Exception
    {
        final List<String> command = java();
        command.addAll(List.of("--enable-native-access=ALL-UNNAMED", "-cp", childClassPath().stream()
            .map(Path::toString).collect(Collectors.joining(File.pathSeparator)),
            NativeAccessWarningsChild.class.getName(), shmAddress()));

        final List<String> stderr = run(command);

        assertThat(reverbWarnings(stderr)).as("stderr:\n%s", String.join("\n", stderr)).isEmpty();
    }

    @Test
    void executableJarWithEnableNativeAccessInItsManifestShouldLeaveNoWarningFromReverb() throws Exception
    {
        final Manifest manifest = new Manifest();
        final Attributes main = manifest.getMainAttributes();
        main.put(Attributes.Name.MANIFEST_VERSION, "1.0");
        main.put(Attributes.Name.MAIN_CLASS, NativeAccessWarningsChild.class.getName());
        main.put(Attributes.Name.CLASS_PATH, childClassPath().stream().map(p -> p.toUri().toString())
            .collect(Collectors.joining(" ")));
        // what benchmarks/pom.xml and the archetype's pom put in their executable jars
        main.put(new Attributes.Name("Add-Exports"), "java.base/jdk.internal.misc java.base/sun.nio.ch");
        main.put(new Attributes.Name("Enable-Native-Access"), "ALL-UNNAMED");
        final Path jar = dir.resolve("app.jar");
        try (OutputStream out = Files.newOutputStream(jar); JarOutputStream ignored = new JarOutputStream(out, manifest))
        {
            // the manifest is the whole jar: the classes come through its Class-Path
        }
        final List<String> command = new ArrayList<>();
        command.add(javaExecutable());
        command.addAll(List.of("-Xmx256m", "-D" + VerbsConfig.SHM_DIR_PROP + "=" + dir,
            "-D" + ProcessCounters.DIR_PROPERTY + "=" + dir, "-jar", jar.toString(), shmAddress()));

        final List<String> stderr = run(command);

        assertThat(reverbWarnings(stderr)).as("stderr:\n%s", String.join("\n", stderr)).isEmpty();
    }

    private String shmAddress()
    {
        return "shm://warnings-" + ProcessHandle.current().pid();
    }

    private String javaExecutable()
    {
        return childJava.toString();
    }

    private List<String> java()
    {
        final List<String> command = new ArrayList<>();
        command.add(javaExecutable());
        command.addAll(List.of("--add-exports", "java.base/jdk.internal.misc=ALL-UNNAMED", "--add-exports",
            "java.base/sun.nio.ch=ALL-UNNAMED", "-Xmx256m", "-D" + VerbsConfig.SHM_DIR_PROP + "=" + dir,
            "-D" + ProcessCounters.DIR_PROPERTY + "=" + dir));
        return command;
    }

    /** The test class path with the main classes first: Reverb's dispatcher, not the test scope's shadow of it. */
    private static List<Path> childClassPath() throws URISyntaxException
    {
        final Path mainClasses = Paths.get(NativeLibrary.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        final List<Path> path = new ArrayList<>();
        path.add(mainClasses);
        Arrays.stream(System.getProperty("java.class.path").split(File.pathSeparator))
            .filter(entry -> !entry.isEmpty())
            .map(Paths::get)
            .filter(entry -> !entry.toAbsolutePath().equals(mainClasses.toAbsolutePath()))
            .forEach(path::add);
        return path;
    }

    /** Runs the child, checks that it did its work, prints other libraries' warnings and returns its stderr. */
    private List<String> run(final List<String> command) throws IOException, InterruptedException
    {
        final Path out = dir.resolve("stdout.txt");
        final Path err = dir.resolve("stderr.txt");
        final Process child = new ProcessBuilder(command).redirectOutput(out.toFile()).redirectError(err.toFile())
            .start();
        try
        {
            assertThat(child.waitFor(CHILD_TIMEOUT_SECONDS, TimeUnit.SECONDS)).as("child exited").isTrue();
        }
        finally
        {
            child.destroyForcibly();
        }
        final List<String> stdout = Files.readAllLines(out, StandardCharsets.UTF_8);
        final List<String> stderr = Files.readAllLines(err, StandardCharsets.UTF_8);
        assertThat(child.exitValue()).as("child exit code; stdout %s, stderr:\n%s", stdout, String.join("\n", stderr))
            .isZero();
        assertThat(stdout).as("the child made its shm:// call and ran the native loader")
            .contains(NativeAccessWarningsChild.SHM_OK)
            .anyMatch(line -> line.startsWith(NativeAccessWarningsChild.NATIVE_RAN));
        stdout.stream().filter(line -> line.startsWith(NativeAccessWarningsChild.NATIVE_RAN)).forEach(System.out::println);
        stderr.stream().filter(line -> line.startsWith(JDK_WARNING) && line.contains("has been called by") && !isReverbs(line))
            .forEach(line -> System.out.println("other library's warning: " + line));
        return stderr;
    }

    /**
     * A line of the JDK's warnings (and Reverb's own stderr warnings) that names a Reverb class. A logger's WARN
     * (the poller watchdog on a loaded machine, say) reports the run, not the JDK, and is not counted.
     */
    private static List<String> reverbWarnings(final List<String> stderr)
    {
        return stderr.stream().filter(line -> line.startsWith(JDK_WARNING) && isReverbs(line))
            .collect(Collectors.toList());
    }

    private static boolean isReverbs(final String line)
    {
        // the dispatcher keeps DiSNi's package name, but it is Reverb's class (this module's main classes)
        return line.contains("io.reverb.") || line.contains(DISPATCHER);
    }
}
