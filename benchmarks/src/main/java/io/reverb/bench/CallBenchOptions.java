package io.reverb.bench;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Pattern;
import picocli.CommandLine.Option;

/**
 * The options of reverb-bench against any service ({@link CallBench}): the method, its request as JSON, where its
 * descriptors come from, metadata and connections. A picocli mixin of {@link BenchOptions}; the load options
 * ({@code -c}, {@code -n}, {@code -z}, {@code --rps}, {@code --warmup}) and the output options are BenchOptions' own.
 * Names follow ghz's where they mean the same.
 */
public final class CallBenchOptions
{
    private static final Pattern HEADER_NAME = Pattern.compile("[a-z0-9_.-]+");

    /** {@code pkg.Service/Method}, or null when benchmarking the echo service. */
    @Option(names = "--call", paramLabel = "pkg.Service/Method")
    public String method;

    /** The request as JSON, {@code @FILE} or {@code @-}; null for {@code {}}. */
    @Option(names = {"-d", "--data"}, paramLabel = "JSON")
    public String data;

    /**
     * A file holding the request as JSON (ghz's {@code -D}, long name only: {@code -D} would swallow
     * {@code --server-jvm-arg -Dname=value}).
     */
    @Option(names = "--data-file", paramLabel = "FILE")
    public Path dataFile;

    /** {@code .proto} files with the method's service. */
    @Option(names = "--proto", paramLabel = "FILE")
    public List<Path> protos = new ArrayList<>();

    /** protoc's import paths for {@link #protos} ({@code -I}, or ghz's {@code -i}/{@code --import-paths}, comma-separated). */
    @Option(names = {"-I", "-i", "--import-path", "--import-paths"}, split = ",", paramLabel = "DIR")
    public List<Path> importPaths = new ArrayList<>();

    /** The protoc executable, or null to look for one. */
    @Option(names = "--protoc", paramLabel = "PATH")
    public Path protoc;

    /** A binary FileDescriptorSet with the method's service. */
    @Option(names = "--protoset", paramLabel = "FILE")
    public Path protoset;

    /** Ask the server's reflection service (the default when neither files nor a protoset are given). */
    @Option(names = "--reflect")
    public boolean reflect;

    /** Metadata as a JSON object of strings (ghz's {@code -m}). */
    @Option(names = {"-m", "--metadata"}, paramLabel = "JSON")
    public String metadata;

    /** Connections (channels) per target; the lanes ({@code -c}) are spread over them. */
    @Option(names = "--connections", paramLabel = "N")
    public int connections = 1;

    /**
     * @return true if a method to call was given.
     */
    public boolean active()
    {
        return method != null;
    }

    /**
     * @throws IllegalArgumentException if an option of this mode is given without {@code --call}, or options
     *     contradict each other.
     */
    void check()
    {
        if (!active())
        {
            if (data != null || dataFile != null || !protos.isEmpty() || !importPaths.isEmpty() || protoc != null ||
                protoset != null || reflect || metadata != null || connections != 1)
            {
                throw new IllegalArgumentException("-d, --data-file, --proto, -I, --protoc, --protoset, --reflect, -m and " +
                    "--connections go with --call pkg.Service/Method");
            }
            return;
        }
        if (data != null && dataFile != null)
        {
            throw new IllegalArgumentException("give -d or --data-file, not both");
        }
        if (reflect && (protoset != null || !protos.isEmpty()))
        {
            throw new IllegalArgumentException("give --reflect, --protoset or --proto, only one");
        }
        if (connections < 1)
        {
            throw new IllegalArgumentException("--connections must be at least 1");
        }
    }

    /**
     * @param in what {@code -d @-} reads.
     * @return the request's JSON ({@code {}} when none is given).
     * @throws IllegalArgumentException if a file cannot be read.
     */
    String requestJson(final InputStream in)
    {
        try
        {
            if (dataFile != null)
            {
                return Files.readString(dataFile, StandardCharsets.UTF_8);
            }
            if (data == null)
            {
                return "{}";
            }
            if ("@-".equals(data))
            {
                return new String(in.readAllBytes(), StandardCharsets.UTF_8);
            }
            if (data.startsWith("@"))
            {
                return Files.readString(Path.of(data.substring(1)), StandardCharsets.UTF_8);
            }
            return data;
        }
        catch (final IOException ex)
        {
            throw new IllegalArgumentException("cannot read the request: " + ex);
        }
    }

    /**
     * @return the metadata as name and value pairs (names lower-cased; {@code -bin} values base64, checked).
     * @throws IllegalArgumentException if {@code -m} is not a JSON object of strings with valid names.
     */
    List<String[]> headers()
    {
        final List<String[]> headers = new ArrayList<>();
        if (metadata == null)
        {
            return headers;
        }
        final JsonNode root;
        try
        {
            root = new ObjectMapper().readTree(metadata);
        }
        catch (final JsonProcessingException ex)
        {
            throw new IllegalArgumentException("-m takes a JSON object, e.g. '{\"x-user\": \"ann\"}': " +
                ex.getOriginalMessage());
        }
        if (root == null || !root.isObject())
        {
            throw new IllegalArgumentException("-m takes a JSON object, e.g. '{\"x-user\": \"ann\"}': " + metadata);
        }
        for (final Map.Entry<String, JsonNode> entry : root.properties())
        {
            final String name = entry.getKey().trim().toLowerCase(Locale.ROOT);
            if (!HEADER_NAME.matcher(name).matches())
            {
                throw new IllegalArgumentException("-m: a metadata name has only a-z, 0-9, '-', '_' and '.': '" +
                    entry.getKey() + "'");
            }
            if (!entry.getValue().isTextual())
            {
                throw new IllegalArgumentException("-m: the value of " + name + " must be a string");
            }
            final String value = entry.getValue().asText();
            if (name.endsWith("-bin"))
            {
                try
                {
                    Base64.getDecoder().decode(value);
                }
                catch (final IllegalArgumentException ex)
                {
                    throw new IllegalArgumentException("-m " + name + ": a -bin value must be base64: " +
                        ex.getMessage());
                }
            }
            headers.add(new String[] {name, value});
        }
        return headers;
    }
}
