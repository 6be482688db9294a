package io.reverb.codegen;

import com.google.protobuf.compiler.PluginProtos.CodeGeneratorResponse;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import javax.tools.Diagnostic;
import javax.tools.DiagnosticCollector;
import javax.tools.JavaCompiler;
import javax.tools.JavaFileObject;
import javax.tools.StandardJavaFileManager;
import javax.tools.ToolProvider;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Collectors;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Compiles what the plugin generates for src/test/proto with javac, against the Java messages protoc
 * generated for the same protos and the real rpc-core, with every lint warning an error; then runs the
 * generated service bases. The usage source (src/test/resources/usage) pins the API shapes at compile time.
 */
class GeneratedCodeCompilesTest
{
    @TempDir
    Path workDirectory;

    @Test
    void shouldCompileWithoutWarningsAndServeUnimplementedByDefault() throws Exception
    {
        final CodeGeneratorResponse response = TestProtos.runPlugin(TestProtos.request());
        assertThat(response.getError()).isEmpty();

        final Path sources = workDirectory.resolve("src");
        final Path classes = Files.createDirectories(workDirectory.resolve("classes"));
        final List<Path> generated = new ArrayList<>();
        for (final CodeGeneratorResponse.File file : response.getFileList())
        {
            final Path path = sources.resolve(file.getName());
            Files.createDirectories(path.getParent());
            Files.writeString(path, file.getContent(), StandardCharsets.UTF_8);
            generated.add(path);
        }
        assertThat(generated).hasSize(8);

        compile(generated, classes, List.of("-Xlint:all", "-Werror"));

        final Path usage = sources.resolve("GeneratedCodeUsage.java");
        try (InputStream in = GeneratedCodeCompilesTest.class.getResourceAsStream("/usage/GeneratedCodeUsage.java"))
        {
            Files.write(usage, in.readAllBytes());
        }
        compile(List.of(usage), classes, List.of("-Xlint:none"));

        try (URLClassLoader loader = new URLClassLoader(new URL[] {classes.toUri().toURL()}, getClass().getClassLoader()))
        {
            @SuppressWarnings("unchecked")
            final List<String> results = (List<String>)loader.loadClass("GeneratedCodeUsage").getMethod("run").invoke(null);
            assertThat(results).containsExactly(
                "service reverb.test.kinds.Kinds methods 9",
                "unary hello reverb",
                "ServerStream UNIMPLEMENTED: Method reverb.test.kinds.Kinds/ServerStream is unimplemented",
                "ClientStream UNIMPLEMENTED: Method reverb.test.kinds.Kinds/ClientStream is unimplemented",
                "Bidi UNIMPLEMENTED: Method reverb.test.kinds.Kinds/Bidi is unimplemented",
                "Ping UNIMPLEMENTED: Method reverb.test.kinds.Kinds/Ping is unimplemented",
                "service reverb.test.clash.Object methods 19",
                "GetClass UNIMPLEMENTED: Method reverb.test.clash.Object/GetClass is unimplemented",
                "class UNIMPLEMENTED: Method reverb.test.clash.Object/class is unimplemented",
                "empty service methods 0",
                "echo Echo/Echo UNARY",
                "descriptor reverb.test.kinds.Kinds in reverb/test/kinds.proto methods 9",
                "descriptor reverb.test.clash.Object in reverb/test/name_clash.proto",
                "service reverb.test.record.var.yield.sealed.permits.Ledger methods 2");
        }
    }

    private static void compile(final List<Path> files, final Path classes, final List<String> lintOptions) throws IOException
    {
        final JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
        assertThat(javac).as("a JDK (not a JRE) runs the tests").isNotNull();
        final DiagnosticCollector<JavaFileObject> diagnostics = new DiagnosticCollector<>();
        try (StandardJavaFileManager fileManager = javac.getStandardFileManager(diagnostics, null, StandardCharsets.UTF_8))
        {
            final List<String> options = new ArrayList<>(List.of(
                "--release", "17",
                "-classpath", testClassPath() + File.pathSeparator + classes,
                "-d", classes.toString(),
                "-encoding", "UTF-8"));
            options.addAll(lintOptions);
            final boolean success = javac.getTask(
                null, fileManager, diagnostics, options, null, fileManager.getJavaFileObjectsFromPaths(files)).call();
            final String report = diagnostics.getDiagnostics().stream()
                .filter(diagnostic -> diagnostic.getKind() != Diagnostic.Kind.NOTE)
                .map(Object::toString)
                .collect(Collectors.joining("\n"));
            assertThat(report).as("javac diagnostics").isEmpty();
            assertThat(success).isTrue();
        }
    }

    private static String testClassPath()
    {
        // Surefire may launch through a manifest-only jar; it publishes the real class path here.
        return System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
    }
}
