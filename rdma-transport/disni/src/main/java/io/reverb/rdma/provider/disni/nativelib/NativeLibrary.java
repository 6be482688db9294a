package io.reverb.rdma.provider.disni.nativelib;

import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.URL;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Locale;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Finds the native half of DiSNi 2.1 for this JVM: the JNI library behind
 * {@code com.ibm.disni.verbs.impl.NativeDispatcher}. Internal: called by that class's static initialiser (which
 * then loads the file itself, so that the library binds to that class's loader) and by the availability probe.
 *
 * <p>Order: a {@code libdisni.so} on {@code java.library.path} (a libdisni the user built, DiSNi 2.1's or any
 * other with its JNI version 32) wins, as DiSNi's own class would load it; otherwise the library this jar
 * carries, {@code META-INF/native/linux-<arch>/libreverb-disni.so} (built from {@code src/main/c} with the
 * project), is copied to a private directory (mode 0700 under {@value #TMPDIR_PROP}, default
 * {@code java.io.tmpdir}) and deleted as soon as it is loaded (Linux keeps the mapping), or at exit if loading
 * fails. Which one is used is logged once.
 */
public final class NativeLibrary
{
    /** System property: the directory to extract the bundled library under (one whose mount allows exec). */
    public static final String TMPDIR_PROP = "reverb.disni.tmpdir";
    /** The bundled library's file name. */
    public static final String BUNDLED_NAME = "libreverb-disni.so";

    /** How the private directories the bundled library is extracted to are named. */
    public static final String EXTRACT_PREFIX = "reverb-disni-";

    private static final Logger LOG = LoggerFactory.getLogger(NativeLibrary.class);
    private static final Object LOCK = new Object();
    private static boolean logged;

    private NativeLibrary()
    {
    }

    /**
     * @return {@code linux-x86_64} or {@code linux-aarch64} (the directory the bundled library would be in), or
     *         null on any other OS or architecture.
     */
    public static String platform()
    {
        if (!System.getProperty("os.name", "").toLowerCase(Locale.ROOT).startsWith("linux"))
        {
            return null;
        }
        switch (System.getProperty("os.arch", ""))
        {
            case "amd64":
            case "x86_64":
                return "linux-x86_64";
            case "aarch64":
            case "arm64":
                return "linux-aarch64";
            default:
                return null;
        }
    }

    /** @return the resource name of this platform's bundled library, e.g. {@code META-INF/native/linux-x86_64/...}. */
    public static String bundledResourceName()
    {
        final String platform = platform();
        return platform == null ? null : "META-INF/native/" + platform + '/' + BUNDLED_NAME;
    }

    /** @return the bundled library for this platform, or null when this jar has none for it. */
    public static URL bundledResource()
    {
        final String name = bundledResourceName();
        return name == null ? null : NativeLibrary.class.getClassLoader().getResource(name);
    }

    /**
     * Called by {@code NativeDispatcher}'s static initialiser.
     *
     * @return the absolute path of the library to {@code System.load}: a {@code libdisni.so} on
     *         {@code java.library.path}, otherwise a fresh copy of the bundled one.
     * @throws UnsatisfiedLinkError when there is neither (the message says what is missing).
     */
    public static String locate()
    {
        final String libraryPath = System.getProperty("java.library.path", "");
        final Path user = findLibrary(System.mapLibraryName("disni"), libraryPath);
        if (user != null)
        {
            logOnce("rdma:// native half: " + user + " (libdisni on java.library.path), not the one bundled in " +
                "reverb-transport-rdma");
            return user.toAbsolutePath().toString();
        }
        final URL bundled = bundledResource();
        if (bundled == null)
        {
            throw new UnsatisfiedLinkError(noLibraryCause(libraryPath));
        }
        try
        {
            final Path file = extract(bundled, tmpdir());
            logOnce("rdma:// native half: " + BUNDLED_NAME + " bundled in reverb-transport-rdma (" + platform() +
                "), loaded from a private copy");
            return file.toString();
        }
        catch (final IOException | UncheckedIOException ex)
        {
            final UnsatisfiedLinkError error = new UnsatisfiedLinkError("cannot extract " + BUNDLED_NAME + " under " +
                tmpdir() + " (" + ex + "): set -D" + TMPDIR_PROP + "=<a writable directory on a mount that allows exec>");
            error.initCause(ex);
            throw error;
        }
    }

    /**
     * Called by {@code NativeDispatcher}'s static initialiser once {@code System.load} returned or threw: deletes a
     * private copy made by {@link #locate()} (a loaded library stays mapped; nothing is left on disk).
     *
     * @param path what {@link #locate()} returned.
     */
    public static void loaded(final String path)
    {
        final Path file = Paths.get(path);
        final Path dir = file.getParent();
        if (dir == null || !dir.getFileName().toString().startsWith(EXTRACT_PREFIX) ||
            !file.getFileName().toString().equals(BUNDLED_NAME))
        {
            return; // the user's libdisni: not ours to delete
        }
        try
        {
            Files.deleteIfExists(file);
            Files.deleteIfExists(dir);
        }
        catch (final IOException ex)
        {
            // deleteOnExit (registered at extraction) is the fallback
        }
    }

    /**
     * Copies the library to a new directory of mode 0700 under {@code parent}; both are deleted at exit if
     * {@link #loaded} does not delete them first.
     *
     * @param library the bundled library.
     * @param parent  where to make the directory.
     * @return the copy.
     * @throws IOException if the copy cannot be made.
     */
    public static Path extract(final URL library, final Path parent) throws IOException
    {
        final Path dir = Files.createTempDirectory(Files.createDirectories(parent), EXTRACT_PREFIX,
            PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
        // deleteOnExit runs in reverse order of registration: the file first, then its directory.
        dir.toFile().deleteOnExit();
        final Path file = dir.resolve(BUNDLED_NAME);
        file.toFile().deleteOnExit();
        try (InputStream in = library.openStream())
        {
            Files.copy(in, file, StandardCopyOption.REPLACE_EXISTING);
        }
        return file;
    }

    /**
     * @param libraryName e.g. {@code libdisni.so}.
     * @param libraryPath path-separator separated directories.
     * @return the first match, or null.
     */
    public static Path findLibrary(final String libraryName, final String libraryPath)
    {
        for (final String dir : libraryPath.split(File.pathSeparator))
        {
            if (dir.isEmpty())
            {
                continue;
            }
            final Path candidate = Paths.get(dir, libraryName);
            if (Files.isRegularFile(candidate))
            {
                return candidate;
            }
        }
        return null;
    }

    private static Path tmpdir()
    {
        return Paths.get(System.getProperty(TMPDIR_PROP, System.getProperty("java.io.tmpdir", "/tmp")));
    }

    public static String noLibraryCause(final String libraryPath)
    {
        final String platform = platform();
        return (platform == null ?
            "reverb-transport-rdma bundles its native half for linux-x86_64 (and linux-aarch64 where built) only, not " +
                System.getProperty("os.name") + '/' + System.getProperty("os.arch") :
            "this reverb-transport-rdma jar has no native half for " + platform + " (" + bundledResourceName() +
                "; built without rdma-core's headers, or with -Dreverb.native.skip=true)") +
            ", and " + System.mapLibraryName("disni") + " is not on java.library.path [" + libraryPath + "]";
    }

    private static void logOnce(final String message)
    {
        synchronized (LOCK)
        {
            if (!logged)
            {
                logged = true;
                LOG.info(message);
            }
        }
    }
}
