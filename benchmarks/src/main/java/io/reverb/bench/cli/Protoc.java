package io.reverb.bench.cli;

import com.google.protobuf.AnyProto;
import com.google.protobuf.ApiProto;
import com.google.protobuf.DescriptorProtos;
import com.google.protobuf.DescriptorProtos.FileDescriptorSet;
import com.google.protobuf.Descriptors.FileDescriptor;
import com.google.protobuf.DurationProto;
import com.google.protobuf.EmptyProto;
import com.google.protobuf.FieldMaskProto;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.JavaFeaturesProto;
import com.google.protobuf.RuntimeVersion;
import com.google.protobuf.SourceContextProto;
import com.google.protobuf.StructProto;
import com.google.protobuf.TimestampProto;
import com.google.protobuf.TypeProto;
import com.google.protobuf.WrappersProto;
import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.TimeUnit;

/**
 * protoc, run to turn {@code .proto} files into descriptors ({@code --include_imports --descriptor_set_out}) for
 * {@code --proto}: Java cannot parse {@code .proto} text without it.
 *
 * <p>Where it is looked for, in order: the path given ({@code --protoc}); the system property {@value #PROPERTY}
 * (the launchers {@code bin/reverb-cli} and {@code bin/reverb-bench} set it to the protoc the build copies to
 * {@code benchmarks/target/protoc/}); the environment variable {@code PROTOC}; Maven's local repository
 * ({@code ~/.m2/repository/com/google/protobuf/protoc/V/protoc-V-OS-ARCH.exe}, V being the protobuf-java version on the
 * class path, which the build downloads for its test protos); {@code protoc} on the {@code PATH}. A protoc that is not
 * executable (Maven stores it so) runs from an executable copy in a temporary directory.
 *
 * <p>The well-known types ({@code google/protobuf/any.proto}, ...) are given to protoc as descriptors of the
 * protobuf-java on the class path ({@code --descriptor_set_in}), so {@code .proto} files may import them without an
 * include directory holding them (the protoc jar of Maven Central has none).
 */
public final class Protoc
{
    /** The system property naming the protoc executable. */
    public static final String PROPERTY = "reverb.protoc";

    private static final long TIMEOUT_SECONDS = 120;

    private final Path executable;

    private Protoc(final Path executable)
    {
        this.executable = executable;
    }

    /**
     * @return the protoc this will run.
     */
    public Path executable()
    {
        return executable;
    }

    /**
     * Finds protoc.
     *
     * @param explicit the path given on the command line, or null.
     * @return protoc, ready to run.
     * @throws CliException ({@link CliException#USAGE}) if none is found, saying where it looked and what to do.
     */
    public static Protoc locate(final Path explicit)
    {
        if (explicit != null)
        {
            if (!Files.isRegularFile(explicit))
            {
                throw new CliException(CliException.USAGE, "ERROR: --protoc " + explicit + ": no such file");
            }
            return new Protoc(runnable(explicit));
        }
        final List<String> tried = new ArrayList<>();
        final List<Path> candidates = new ArrayList<>();
        final String property = System.getProperty(PROPERTY);
        if (property != null && !property.isBlank())
        {
            candidates.add(Path.of(property));
            tried.add("-D" + PROPERTY + "=" + property);
        }
        final String env = System.getenv("PROTOC");
        if (env != null && !env.isBlank())
        {
            candidates.add(Path.of(env));
            tried.add("$PROTOC=" + env);
        }
        final Path m2 = mavenRepositoryProtoc();
        candidates.add(m2);
        tried.add(m2.toString());
        for (final Path candidate : candidates)
        {
            if (Files.isRegularFile(candidate))
            {
                return new Protoc(runnable(candidate));
            }
        }
        final String path = System.getenv("PATH");
        if (path != null)
        {
            for (final String dir : path.split(File.pathSeparator))
            {
                final Path onPath = Path.of(dir.isEmpty() ? "." : dir, "protoc");
                if (Files.isRegularFile(onPath) && Files.isExecutable(onPath))
                {
                    return new Protoc(onPath);
                }
            }
        }
        tried.add("protoc on the PATH");
        throw new CliException(CliException.USAGE, "ERROR: --proto needs protoc, and none was found (tried " +
            String.join(", ", tried) + "). Build the tool with its launcher (bin/reverb-cli or bin/reverb-bench: the " +
            "build copies protoc to benchmarks/target/protoc/), or fetch it with mvn -B dependency:get " +
            "-Dartifact=com.google.protobuf:protoc:" + runtimeVersion() + ":exe:" + classifier() + ", or pass " +
            "--protoc PATH; or give --protoset FILE (protoc --include_imports --descriptor_set_out=FILE ...) instead.");
    }

    /**
     * @return the protoc that Maven's local repository holds for the protobuf-java version on the class path.
     */
    static Path mavenRepositoryProtoc()
    {
        final String repository = System.getProperty("maven.repo.local");
        final Path root = repository != null && !repository.isBlank() ? Path.of(repository)
            : Path.of(System.getProperty("user.home"), ".m2", "repository");
        final String version = runtimeVersion();
        return root.resolve(Path.of("com", "google", "protobuf", "protoc", version,
            "protoc-" + version + "-" + classifier() + ".exe"));
    }

    /**
     * @return the version of protobuf-java on the class path, e.g. {@code 4.36.2}.
     */
    static String runtimeVersion()
    {
        return RuntimeVersion.MAJOR + "." + RuntimeVersion.MINOR + "." + RuntimeVersion.PATCH +
            RuntimeVersion.SUFFIX;
    }

    /**
     * @return this machine as protoc's Maven classifier names it (os-maven-plugin's names), e.g. {@code linux-x86_64}.
     */
    static String classifier()
    {
        final String os = System.getProperty("os.name").toLowerCase(Locale.ROOT);
        final String arch = System.getProperty("os.arch").toLowerCase(Locale.ROOT);
        final String osName = os.startsWith("mac") || os.startsWith("darwin") ? "osx"
            : os.startsWith("windows") ? "windows" : os.replaceAll("[^a-z0-9]", "");
        final String archName;
        switch (arch)
        {
            case "amd64":
            case "x86_64":
                archName = "x86_64";
                break;
            case "aarch64":
            case "arm64":
                archName = "aarch_64";
                break;
            case "ppc64le":
                archName = "ppcle_64";
                break;
            case "s390x":
                archName = "s390_64";
                break;
            default:
                archName = arch;
                break;
        }
        return osName + "-" + archName;
    }

    /** An executable copy of a protoc that is not executable itself (Maven stores it without the x bit). */
    private static Path runnable(final Path protoc)
    {
        if (Files.isExecutable(protoc))
        {
            return protoc;
        }
        try
        {
            final Path dir = Files.createTempDirectory("reverb-protoc-");
            final Path copy = dir.resolve("protoc");
            Files.copy(protoc, copy, StandardCopyOption.REPLACE_EXISTING);
            try
            {
                Files.setPosixFilePermissions(copy, PosixFilePermissions.fromString("rwx------"));
            }
            catch (final UnsupportedOperationException ex)
            {
                // not a POSIX file system (Windows): executable by its name
            }
            copy.toFile().deleteOnExit();
            dir.toFile().deleteOnExit();
            return copy;
        }
        catch (final IOException ex)
        {
            throw new CliException(CliException.USAGE, "ERROR: cannot make an executable copy of " + protoc + ": " + ex);
        }
    }

    /**
     * Compiles {@code .proto} files into descriptors.
     *
     * @param files       the files, as paths on disk or relative to an import path.
     * @param importPaths where imports are looked for (protoc's {@code -I}); when empty, each file's directory.
     * @return the files and all their imports.
     * @throws CliException ({@link CliException#USAGE}) with protoc's own messages if it fails.
     */
    public FileDescriptorSet compile(final List<Path> files, final List<Path> importPaths)
    {
        if (files.isEmpty())
        {
            throw new CliException(CliException.USAGE, "ERROR: no .proto file given");
        }
        final Set<Path> includes = new LinkedHashSet<>(importPaths);
        if (includes.isEmpty())
        {
            for (final Path file : files)
            {
                final Path parent = file.toAbsolutePath().normalize().getParent();
                includes.add(parent == null ? Path.of(".") : parent);
            }
        }
        Path work = null;
        try
        {
            work = Files.createTempDirectory("reverb-proto-");
            final Path wellKnown = work.resolve("well-known.protoset");
            Files.write(wellKnown, wellKnownTypes().toByteArray());
            final Path out = work.resolve("out.protoset");
            final List<String> command = new ArrayList<>();
            command.add(executable.toString());
            for (final Path include : includes)
            {
                command.add("--proto_path=" + include);
            }
            command.add("--descriptor_set_in=" + wellKnown);
            command.add("--include_imports");
            command.add("--descriptor_set_out=" + out);
            for (final Path file : files)
            {
                // relative to the first import path that holds it: as written when it is a file here, else as given
                command.add(importPaths.isEmpty() ? file.getFileName().toString() : file.toString());
            }
            final Path log = work.resolve("protoc.log");
            final Process process = new ProcessBuilder(command).redirectErrorStream(true)
                .redirectOutput(log.toFile()).start();
            if (!process.waitFor(TIMEOUT_SECONDS, TimeUnit.SECONDS))
            {
                process.destroyForcibly();
                throw new CliException(CliException.USAGE, "ERROR: protoc did not finish within " + TIMEOUT_SECONDS +
                    " s: " + String.join(" ", command));
            }
            final String messages = Files.readString(log, StandardCharsets.UTF_8).trim();
            if (process.exitValue() != 0)
            {
                throw new CliException(CliException.USAGE, "ERROR: protoc could not compile " + files + " (import " +
                    "paths " + includes + "):\n" + (messages.isEmpty() ? "exit status " + process.exitValue()
                    : messages));
            }
            return FileDescriptorSet.parseFrom(Files.readAllBytes(out));
        }
        catch (final InvalidProtocolBufferException ex)
        {
            throw new CliException(CliException.USAGE, "ERROR: protoc wrote descriptors that do not parse: " +
                ex.getMessage());
        }
        catch (final IOException ex)
        {
            throw new CliException(CliException.USAGE, "ERROR: cannot run protoc (" + executable + "): " + ex);
        }
        catch (final InterruptedException ex)
        {
            Thread.currentThread().interrupt();
            throw new CliException(CliException.USAGE, "ERROR: interrupted while protoc ran");
        }
        finally
        {
            deleteTree(work);
        }
    }

    /**
     * @return the well-known types of the protobuf-java on the class path, as protoc's {@code --descriptor_set_in}
     *     reads them.
     */
    static FileDescriptorSet wellKnownTypes()
    {
        final FileDescriptorSet.Builder set = FileDescriptorSet.newBuilder();
        for (final FileDescriptor file : List.of(DescriptorProtos.getDescriptor(), AnyProto.getDescriptor(),
            ApiProto.getDescriptor(), DurationProto.getDescriptor(), EmptyProto.getDescriptor(),
            FieldMaskProto.getDescriptor(), SourceContextProto.getDescriptor(), StructProto.getDescriptor(),
            TimestampProto.getDescriptor(), TypeProto.getDescriptor(), WrappersProto.getDescriptor(),
            JavaFeaturesProto.getDescriptor()))
        {
            set.addFile(file.toProto());
        }
        return set.build();
    }

    private static void deleteTree(final Path dir)
    {
        if (dir == null)
        {
            return;
        }
        try (var paths = Files.walk(dir))
        {
            paths.sorted((a, b) -> b.getNameCount() - a.getNameCount()).forEach(p -> p.toFile().delete());
        }
        catch (final IOException ex)
        {
            // a temporary directory left behind: nothing to tell the user about
        }
    }
}
