package io.reverb.examples.gradle;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.Reader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import java.util.zip.ZipEntry;
import java.util.zip.ZipFile;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Gradle cannot run on the machines this project is built on (no Gradle distribution is reachable, and the Debian
 * package, 4.4.1, is too old for Java 17 and for the protobuf Gradle plugin). So this test checks what can be checked
 * without Gradle, that {@code examples/gradle} would build:
 * <ul>
 *   <li>its versions are those of this checkout, and the Reverb coordinates name artifacts this build makes;</li>
 *   <li>every third-party coordinate (the {@code com.google.protobuf} plugin marker and jar, protoc, the libraries)
 *       resolves from Maven Central (through a child Maven);</li>
 *   <li>the protoc plugin artifact works the way the protobuf Gradle plugin runs a {@code .jar} artifact (a script
 *       running {@code java -jar} on it), producing the same stubs as the Maven build.</li>
 * </ul>
 */
class GradleBuildScriptTest
{
    private static final Path MODULE = Paths.get("").toAbsolutePath();
    private static final Path GRADLE = MODULE.resolve("gradle");
    private static final Path ROOT = MODULE.getParent();
    private static final Path WORK = MODULE.resolve("target/gradle-check");

    private static Properties gradleProperties;
    private static String buildScript;
    private static String settingsScript;
    private static String rootPom;

    @BeforeAll
    static void read() throws IOException
    {
        gradleProperties = new Properties();
        try (Reader in = Files.newBufferedReader(GRADLE.resolve("gradle.properties")))
        {
            gradleProperties.load(in);
        }
        buildScript = Files.readString(GRADLE.resolve("build.gradle.kts"));
        settingsScript = Files.readString(GRADLE.resolve("settings.gradle.kts"));
        rootPom = Files.readString(ROOT.resolve("pom.xml"));
    }

    @Test
    void shouldUseTheVersionsOfThisCheckout()
    {
        assertThat(version("reverbVersion")).isEqualTo(pomElement(rootPom, "version"));
        assertThat(version("protobufVersion")).isEqualTo(pomElement(rootPom, "protobuf.version"));
        assertThat(version("slf4jVersion")).isEqualTo(pomElement(rootPom, "slf4j.version"));
        assertThat(version("junitVersion")).isEqualTo(pomElement(rootPom, "junit.version"));
        assertThat(version("assertjVersion")).isEqualTo(pomElement(rootPom, "assertj.version"));
        assertThat(version("reactorVersion")).isEqualTo(pomElement(rootPom, "reactor.version"));
    }

    @Test
    void shouldNameReverbArtifactsThatThisBuildMakes() throws IOException
    {
        assertThat(buildScript)
            .contains("id(\"com.google.protobuf\")")
            .contains("implementation(platform(\"io.reverb:reverb-bom:$reverbVersion\"))")
            .contains("artifact = \"com.google.protobuf:protoc:$protobufVersion\"")
            .contains("artifact = \"io.reverb:reverb-codegen-plugin:$reverbVersion:standalone@jar\"")
            .contains("\"--add-exports\", \"java.base/jdk.internal.misc=ALL-UNNAMED\"");
        assertThat(settingsScript).contains("id(\"com.google.protobuf\") version protobufGradlePluginVersion");

        // The BOM manages every Reverb artifact the script uses without a version.
        final String bom = Files.readString(ROOT.resolve("reverb-bom/pom.xml"));
        final Matcher versionless = Pattern.compile("implementation\\(\"io\\.reverb:([a-z-]+)\"\\)").matcher(buildScript);
        final List<String> managed = new ArrayList<>();
        while (versionless.find())
        {
            managed.add(versionless.group(1));
            assertThat(bom).contains("<artifactId>" + versionless.group(1) + "</artifactId>");
        }
        assertThat(managed).containsExactly("reverb-rpc-core", "reverb-transport");

        // A .jar protoc plugin must be self-contained and executable: the shaded "standalone" jar with a Main-Class.
        final String codegenPom = Files.readString(ROOT.resolve("codegen-plugin/pom.xml"));
        assertThat(codegenPom)
            .contains("<shadedClassifierName>standalone</shadedClassifierName>")
            .contains("<mainClass>io.reverb.codegen.ReverbProtocPlugin</mainClass>");
    }

    @Test
    void shouldGenerateTheSameStubsWhenRunAsTheGradlePluginRunsAJarPlugin() throws Exception
    {
        final String version = version("reverbVersion");
        final Path jar = ROOT.resolve("codegen-plugin/target/reverb-codegen-plugin-" + version + "-standalone.jar");
        final Path protoc = MODULE.resolve("target/protoc-plugins/protoc-" + version("protobufVersion") + "-" +
            osClassifier() + ".exe");
        assertThat(jar).as("built by the codegen-plugin module (mvn -pl examples -am ...)").isRegularFile();
        assertThat(protoc).as("copied there by protobuf-maven-plugin when this module compiled").isRegularFile();

        // What the protobuf Gradle plugin writes for a .jar artifact: a script that runs it with java -jar.
        Files.createDirectories(WORK);
        final Path trampoline = WORK.resolve("protoc-gen-reverb.sh");
        Files.writeString(trampoline, "#!/bin/sh\nexec '" + Paths.get(System.getProperty("java.home"), "bin", "java") +
            "' -jar '" + jar + "' \"$@\"\n");
        Files.setPosixFilePermissions(trampoline, PosixFilePermissions.fromString("rwxr-xr-x"));
        final Path out = WORK.resolve("generated");
        deleteTree(out);
        Files.createDirectories(out);

        // As the Gradle plugin does (extractIncludeProto): the well-known types come from protobuf-java's jar.
        final Path include = WORK.resolve("include");
        deleteTree(include);
        extractProtos(classPathJar("protobuf-java-" + version("protobufVersion") + ".jar"), include);

        final Path protoRoot = MODULE.resolve("src/main/proto");
        final List<String> command = new ArrayList<>(List.of(protoc.toString(), "-I" + protoRoot, "-I" + include,
            "--plugin=protoc-gen-reverb=" + trampoline, "--reverb_out=" + out));
        try (Stream<Path> protos = Files.walk(protoRoot))
        {
            protos.filter(p -> p.toString().endsWith(".proto")).sorted().forEach(p -> command.add(p.toString()));
        }
        final Result result = run(command, 120);
        assertThat(result.exitCode).as(result.output).isZero();

        final Map<String, String> gradleStyle = rpcFiles(out);
        final Map<String, String> mavenStyle = rpcFiles(MODULE.resolve("target/generated-sources/protobuf/java"));
        assertThat(gradleStyle.keySet()).as("generated stubs").isNotEmpty()
            .contains("io/reverb/examples/helloworld/GreeterRpc.java");
        assertThat(gradleStyle).isEqualTo(mavenStyle);
    }

    @Test
    void shouldResolveEveryThirdPartyCoordinateFromMavenCentral() throws Exception
    {
        final String protobuf = version("protobufVersion");
        // groupId, artifactId, version, type, classifier: what Gradle fetches for this build script.
        final List<String[]> coordinates = List.of(
            new String[] {"com.google.protobuf", "com.google.protobuf.gradle.plugin", version("protobufGradlePluginVersion"),
                "pom", null},
            new String[] {"com.google.protobuf", "protobuf-gradle-plugin", version("protobufGradlePluginVersion"), "jar", null},
            new String[] {"com.google.protobuf", "protoc", protobuf, "exe", osClassifier()},
            new String[] {"com.google.protobuf", "protobuf-java", protobuf, "jar", null},
            new String[] {"org.slf4j", "slf4j-simple", version("slf4jVersion"), "jar", null},
            new String[] {"org.junit.jupiter", "junit-jupiter", version("junitVersion"), "jar", null},
            new String[] {"org.assertj", "assertj-core", version("assertjVersion"), "jar", null},
            new String[] {"io.projectreactor", "reactor-test", version("reactorVersion"), "jar", null});
        final StringBuilder dependencies = new StringBuilder();
        for (final String[] c : coordinates)
        {
            dependencies.append("    <dependency><groupId>").append(c[0]).append("</groupId><artifactId>").append(c[1])
                .append("</artifactId><version>").append(c[2]).append("</version><type>").append(c[3]).append("</type>")
                .append(c[4] == null ? "" : "<classifier>" + c[4] + "</classifier>").append("</dependency>\n");
        }
        final Path project = WORK.resolve("resolve");
        Files.createDirectories(project);
        Files.writeString(project.resolve("pom.xml"),
            "<project xmlns=\"http://maven.apache.org/POM/4.0.0\">\n  <modelVersion>4.0.0</modelVersion>\n" +
            "  <groupId>io.reverb.check</groupId><artifactId>gradle-coordinates</artifactId><version>1</version>\n" +
            "  <packaging>pom</packaging>\n  <dependencies>\n" + dependencies + "  </dependencies>\n</project>\n");

        final List<String> command = new ArrayList<>(List.of(mavenExecutable(), "-B", "-q",
            "-Dmaven.repo.local=" + localRepository(), "-f", project.resolve("pom.xml").toString(),
            "org.apache.maven.plugins:maven-dependency-plugin:3.8.1:resolve"));
        final Result result = run(command, 540);
        assertThat(result.exitCode).as("child Maven resolving the Gradle build's coordinates:\n" + result.output).isZero();
    }

    private static String version(final String key)
    {
        final String value = gradleProperties.getProperty(key);
        assertThat(value).as("gradle.properties " + key).isNotBlank();
        return value.trim();
    }

    /** The first element of that name in the root pom: its own version, or a property. */
    private static String pomElement(final String pom, final String name)
    {
        final String withoutParent = pom.replaceFirst("(?s)<parent>.*?</parent>", "");
        final Matcher m = Pattern.compile("<" + Pattern.quote(name) + ">([^<]+)</" + Pattern.quote(name) + ">")
            .matcher(withoutParent);
        assertThat(m.find()).as("root pom has <" + name + ">").isTrue();
        return m.group(1).trim();
    }

    private static String osClassifier()
    {
        final String arch = System.getProperty("os.arch");
        final String os = System.getProperty("os.name").toLowerCase(Locale.ROOT);
        assertThat(os).as("this check runs protoc for Linux only").startsWith("linux");
        return "linux-" + ("amd64".equals(arch) || "x86_64".equals(arch) ? "x86_64" : "aarch64".equals(arch) ? "aarch_64" : arch);
    }

    private static Path classPathJar(final String fileName)
    {
        for (final String entry : System.getProperty("java.class.path").split(File.pathSeparator))
        {
            if (entry.endsWith(File.separator + fileName))
            {
                return Paths.get(entry);
            }
        }
        throw new AssertionError(fileName + " is not on the test class path");
    }

    private static void extractProtos(final Path jar, final Path into) throws IOException
    {
        try (ZipFile zip = new ZipFile(jar.toFile()))
        {
            for (final ZipEntry entry : Collections.list(zip.entries()))
            {
                if (!entry.isDirectory() && entry.getName().endsWith(".proto") && !entry.getName().contains(".."))
                {
                    final Path target = into.resolve(entry.getName());
                    Files.createDirectories(target.getParent());
                    try (InputStream in = zip.getInputStream(entry))
                    {
                        Files.copy(in, target);
                    }
                }
            }
        }
    }

    /** The local repository this build uses, found from a jar on the test class path. */
    private static String localRepository()
    {
        final String marker = File.separator + "org" + File.separator + "assertj" + File.separator;
        for (final String entry : System.getProperty("java.class.path").split(File.pathSeparator))
        {
            final int at = entry.indexOf(marker + "assertj-core" + File.separator);
            if (at > 0)
            {
                return entry.substring(0, at);
            }
        }
        throw new AssertionError("assertj-core is not on the class path from a Maven repository: " +
            System.getProperty("java.class.path"));
    }

    private static String mavenExecutable()
    {
        final String home = System.getenv("MAVEN_HOME");
        if (home != null && Files.isExecutable(Paths.get(home, "bin", "mvn")))
        {
            return Paths.get(home, "bin", "mvn").toString();
        }
        return "mvn";
    }

    private static Map<String, String> rpcFiles(final Path dir) throws IOException
    {
        try (Stream<Path> files = Files.walk(dir))
        {
            final Map<String, String> byPath = new TreeMap<>();
            for (final Path p : files.filter(f -> f.toString().endsWith("Rpc.java")).collect(Collectors.toList()))
            {
                byPath.put(dir.relativize(p).toString().replace(File.separatorChar, '/'), Files.readString(p));
            }
            return byPath;
        }
    }

    private static void deleteTree(final Path dir) throws IOException
    {
        if (Files.exists(dir))
        {
            try (Stream<Path> files = Files.walk(dir))
            {
                for (final Path p : files.sorted((a, b) -> b.compareTo(a)).collect(Collectors.toList()))
                {
                    Files.delete(p);
                }
            }
        }
    }

    private static Result run(final List<String> command, final int timeoutSeconds) throws Exception
    {
        final ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true);
        builder.environment().remove("MAVEN_OPTS");
        final Process process = builder.start();
        final ByteArrayOutputStream output = new ByteArrayOutputStream();
        final Thread drain = new Thread(() ->
        {
            try
            {
                process.getInputStream().transferTo(output);
            }
            catch (final IOException ignored)
            {
                // the process ended
            }
        });
        drain.start();
        if (!process.waitFor(timeoutSeconds, TimeUnit.SECONDS))
        {
            process.destroyForcibly();
            throw new AssertionError(command.get(0) + " did not finish in " + timeoutSeconds + " s: " + output);
        }
        drain.join(10_000);
        return new Result(process.exitValue(), output.toString(StandardCharsets.UTF_8));
    }

    private static final class Result
    {
        final int exitCode;
        final String output;

        Result(final int exitCode, final String output)
        {
            this.exitCode = exitCode;
            this.output = output;
        }
    }
}
