package io.reverb.rpc.testing;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Finds a JDK of at least a given feature version for a test that checks what only a newer JDK does (virtual threads,
 * JDK 24's native-access warnings) while the build runs on 17: the test then runs its scenario in a child JVM of that
 * JDK instead of skipping. Looked for, in order: this JVM; the JDK home in {@value #PROPERTY}; the JDKs beside this
 * one (for example {@code /usr/lib/jvm/*}, where Debian and Temurin packages install), by their {@code release} file.
 */
public final class Jdks
{
    /** A JDK home to use for child JVMs of a newer JDK (for example {@code -Dreverb.test.newerJdk=/opt/jdk-25}). */
    public static final String PROPERTY = "reverb.test.newerJdk";
    private static final Pattern JAVA_VERSION = Pattern.compile("^JAVA_VERSION=\"(\\d+)", Pattern.MULTILINE);

    private Jdks()
    {
    }

    /** @return this JVM's feature version (17 for Java 17). */
    public static int currentFeature()
    {
        return Runtime.version().feature();
    }

    /**
     * @param feature the least feature version wanted.
     * @return the {@code java} executable of a JDK of at least that version (this JVM's if it is one), or null.
     */
    public static Path javaAtLeast(final int feature)
    {
        final Path current = Paths.get(System.getProperty("java.home"));
        if (currentFeature() >= feature)
        {
            return java(current);
        }
        final List<Path> homes = new ArrayList<>();
        final String configured = System.getProperty(PROPERTY);
        if (configured != null && !configured.isBlank())
        {
            homes.add(Paths.get(configured));
        }
        final Path parent = current.toAbsolutePath().getParent();
        if (parent != null)
        {
            homes.addAll(children(parent));
        }
        for (final Path home : homes)
        {
            final int found = feature(home);
            if (found >= feature && Files.isExecutable(java(home)))
            {
                return java(home);
            }
        }
        return null;
    }

    /**
     * @param feature the least feature version wanted.
     * @return why {@link #javaAtLeast} found none, naming where it looked and how to point it at one.
     */
    public static String noneFound(final int feature)
    {
        final Path parent = Paths.get(System.getProperty("java.home")).toAbsolutePath().getParent();
        return "this JVM is Java " + currentFeature() + " and no JDK " + feature + "+ was found beside it (" + parent +
            ") or in -D" + PROPERTY + "; install one there (Debian: /usr/lib/jvm) or set -D" + PROPERTY +
            "=<JDK home>, or run bin/test-jdks";
    }

    private static Path java(final Path home)
    {
        return home.resolve("bin").resolve("java");
    }

    private static List<Path> children(final Path dir)
    {
        final List<Path> children = new ArrayList<>();
        try (DirectoryStream<Path> entries = Files.newDirectoryStream(dir))
        {
            for (final Path entry : entries)
            {
                children.add(entry);
            }
        }
        catch (final IOException | SecurityException ex)
        {
            // nothing beside this JDK can be listed: only the property is tried
        }
        children.sort(null);
        return children;
    }

    /** @return the feature version in a JDK home's {@code release} file, or -1 if it has none. */
    private static int feature(final Path home)
    {
        try
        {
            final Matcher matcher = JAVA_VERSION.matcher(Files.readString(home.resolve("release"), StandardCharsets.UTF_8));
            return matcher.find() ? Integer.parseInt(matcher.group(1)) : -1;
        }
        catch (final IOException | RuntimeException ex)
        {
            return -1;
        }
    }
}
