package io.reverb.codegen;

import com.google.protobuf.DescriptorProtos.Edition;
import com.google.protobuf.compiler.PluginProtos.CodeGeneratorResponse;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Compares what the plugin generates for src/test/proto with src/test/resources/golden.
 *
 * <p>After an intended change of the generated code, regenerate the goldens and review the diff:
 * {@code mvn -B -pl codegen-plugin -am test -Dtest=GoldenFilesTest -Dsurefire.failIfNoSpecifiedTests=false
 * -Dreverb.regenerateGoldens=true}.
 */
class GoldenFilesTest
{
    private static final Path GOLDEN_DIRECTORY =
        Path.of(System.getProperty("reverb.goldenDirectory", "src/test/resources/golden"));

    @Test
    void shouldGenerateExactlyTheGoldenFiles() throws IOException
    {
        final CodeGeneratorResponse response = TestProtos.runPlugin(TestProtos.request());
        assertThat(response.getError()).isEmpty();

        final Map<String, String> generated = new TreeMap<>();
        for (final CodeGeneratorResponse.File file : response.getFileList())
        {
            generated.put(file.getName(), file.getContent());
        }
        if (Boolean.getBoolean("reverb.regenerateGoldens"))
        {
            regenerate(generated);
        }

        assertThat(generated.keySet()).containsExactlyElementsOf(goldenFileNames());
        for (final Map.Entry<String, String> entry : generated.entrySet())
        {
            final String golden = Files.readString(GOLDEN_DIRECTORY.resolve(entry.getKey()), StandardCharsets.UTF_8);
            assertThat(entry.getValue())
                .as("generated %s differs from its golden file; if intended, regenerate (see GoldenFilesTest javadoc)",
                    entry.getKey())
                .isEqualTo(golden);
        }
    }

    @Test
    void shouldDeclareProto3OptionalAndEditionsUpTo2023() throws IOException
    {
        final CodeGeneratorResponse response = TestProtos.runPlugin(TestProtos.request());

        assertThat(response.getSupportedFeatures() & CodeGeneratorResponse.Feature.FEATURE_PROTO3_OPTIONAL_VALUE).isNotZero();
        assertThat(response.getSupportedFeatures() & CodeGeneratorResponse.Feature.FEATURE_SUPPORTS_EDITIONS_VALUE).isNotZero();
        assertThat(response.getMaximumEdition()).isEqualTo(Edition.EDITION_2023_VALUE);
    }

    private static TreeSet<String> goldenFileNames() throws IOException
    {
        if (!Files.isDirectory(GOLDEN_DIRECTORY))
        {
            return new TreeSet<>();
        }
        try (Stream<Path> paths = Files.walk(GOLDEN_DIRECTORY))
        {
            return paths
                .filter(Files::isRegularFile)
                .map(path -> GOLDEN_DIRECTORY.relativize(path).toString().replace('\\', '/'))
                .collect(Collectors.toCollection(TreeSet::new));
        }
    }

    private static void regenerate(final Map<String, String> generated) throws IOException
    {
        if (Files.isDirectory(GOLDEN_DIRECTORY))
        {
            try (Stream<Path> paths = Files.walk(GOLDEN_DIRECTORY))
            {
                for (final Path path : paths.filter(Files::isRegularFile).toList())
                {
                    Files.delete(path);
                }
            }
        }
        for (final Map.Entry<String, String> entry : generated.entrySet())
        {
            final Path target = GOLDEN_DIRECTORY.resolve(entry.getKey());
            Files.createDirectories(target.getParent());
            Files.writeString(target, entry.getValue(), StandardCharsets.UTF_8);
        }
    }
}
