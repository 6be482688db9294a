package io.reverb.bench.cli;

import com.google.protobuf.Descriptors.GenericDescriptor;
import com.google.protobuf.Descriptors.MethodDescriptor;
import com.google.protobuf.Descriptors.ServiceDescriptor;
import com.google.protobuf.DynamicMessage;
import com.google.protobuf.InvalidProtocolBufferException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStreamWriter;
import java.io.PrintWriter;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Locale;
import java.util.function.Supplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * reverb-cli: grpcurl's verbs ({@code list}, {@code describe}, {@code call}) over any Reverb URI ({@code shm://},
 * {@code tcp://}, {@code rdma://}) and over {@code grpc://host:port} (grpc-java over Netty), with the
 * server's reflection service ({@code grpc.reflection.v1}), a protoset file or {@code .proto} files (compiled by
 * {@link Protoc}) for the descriptors, and JSON in and out. Exit codes: 0 OK, 1 a call or lookup failed with a status
 * other than OK, 2 usage, 3 no connection or no reflection service.
 */
@Command(name = "reverb-cli", mixinStandardHelpOptions = true, version = "reverb-cli 0.1",
    description = {"grpcurl's verbs over any Reverb URI (shm://, tcp://, rdma://; grpc+shm:// etc. through grpc-java " +
        "on reverb-grpc) and grpc://host:port (grpc-java over Netty, for comparison). Descriptors come " +
        "from the server's reflection service (grpc.reflection.v1), from --protoset FILE (a binary " +
        "FileDescriptorSet: protoc --include_imports --descriptor_set_out=FILE; no protoc at run time) or from " +
        "--proto FILE.proto with -I DIR (compiled by protoc, which the build fetches).",
        "Exit codes: 0 OK; 1 the call (or a lookup) failed with a status other than OK, printed as " +
            "'ERROR: CODE: description' on stderr; 2 usage error (bad flags, bad JSON); 3 cannot connect, or no " +
            "reflection service.",
        "A server is not trusted: its names and errors are printed with control characters escaped (\\uXXXX), " +
            "and reflection is bounded (one response a request, imports 100 deep, 5,000 files, 16 MiB). " +
            "--token and --tls* reach a server that requires them."},
    subcommands = {CommandLine.HelpCommand.class})
public final class ReverbCli implements Runnable
{
    /** How long a reflection exchange may take when --deadline does not say. */
    static final Duration REFLECTION_DEADLINE = Duration.ofSeconds(10);

    /** How many responses a call may print unless --max-responses says otherwise. */
    static final long DEFAULT_MAX_RESPONSES = 10_000;

    /** The scheme prefix of grpc-java over a Reverb transport: {@code grpc+shm://NAME}. */
    static final String GRPC_OVER_REVERB = "grpc+";

    private static final Pattern DURATION = Pattern.compile("(\\d+(?:\\.\\d+)?)(ms|s|m|h)?");
    private static final Pattern HEADER_NAME = Pattern.compile("[a-z0-9_.-]+");

    @Spec
    private CommandSpec spec;

    @Override
    public void run()
    {
        throw new ParameterException(spec.commandLine(), "Missing verb: list, describe or call");
    }

    /**
     * @param args the command line.
     */
    public static void main(final String[] args)
    {
        final PrintWriter out = new PrintWriter(new OutputStreamWriter(System.out, StandardCharsets.UTF_8), true);
        final PrintWriter err = new PrintWriter(new OutputStreamWriter(System.err, StandardCharsets.UTF_8), true);
        System.exit(execute(args, System.in, out, err));
    }

    /**
     * Runs one command line in this process.
     *
     * @param args the command line.
     * @param in   what {@code -d @-} reads.
     * @param out  where responses, lists and descriptions go.
     * @param err  where errors and usage go.
     * @return the exit code.
     */
    public static int execute(final String[] args, final InputStream in, final PrintWriter out, final PrintWriter err)
    {
        final CommandLine cli = new CommandLine(new ReverbCli())
            .addSubcommand(new ListVerb(out))
            .addSubcommand(new DescribeVerb(out))
            .addSubcommand(new CallVerb(in, out));
        cli.setExpandAtFiles(false); // -d @FILE is the request's JSON, not picocli's argument file
        cli.setOut(out);
        cli.setErr(err);
        cli.setExecutionExceptionHandler((ex, line, parsed) ->
        {
            if (ex instanceof CliException)
            {
                err.println(Printable.text(ex.getMessage())); // messages quote what the server sent
                err.flush();
                return ((CliException)ex).exitCode();
            }
            // not one of ours: a bug, or a failure nobody named; say what it was, without a stack trace
            err.println("ERROR: " + Printable.text(String.valueOf(ex)));
            err.flush();
            return CliException.CALL_FAILED;
        });
        final int code = cli.execute(args);
        out.flush();
        err.flush();
        return code;
    }

    /**
     * @param text a duration: {@code 5s}, {@code 250ms}, {@code 1.5s}, {@code 2m}, {@code 1h}; a bare number is seconds.
     * @return the duration.
     * @throws IllegalArgumentException if it is none of these, or not positive.
     */
    static Duration parseDuration(final String text)
    {
        final Matcher matcher = DURATION.matcher(text.trim().toLowerCase(Locale.ROOT));
        if (!matcher.matches())
        {
            throw new IllegalArgumentException("not a duration: '" + text + "' (e.g. 5s, 250ms, 1.5s, 2m)");
        }
        final double amount = Double.parseDouble(matcher.group(1));
        final String unit = matcher.group(2) == null ? "s" : matcher.group(2);
        final double nanosPerUnit;
        switch (unit)
        {
            case "ms":
                nanosPerUnit = 1e6;
                break;
            case "m":
                nanosPerUnit = 60e9;
                break;
            case "h":
                nanosPerUnit = 3600e9;
                break;
            default:
                nanosPerUnit = 1e9;
                break;
        }
        final long nanos = (long)(amount * nanosPerUnit);
        if (nanos <= 0)
        {
            throw new IllegalArgumentException("the duration must be positive: '" + text + "'");
        }
        return Duration.ofNanos(nanos);
    }

    /**
     * The options every verb takes, and the connection they lead to.
     */
    static final class Common
    {
        @Parameters(index = "0", paramLabel = "URI", description = "shm://NAME, tcp://HOST:PORT, rdma://HOST:PORT " +
            "(a Reverb server, native or grpc-java on reverb-grpc), grpc+shm://NAME, grpc+tcp://HOST:PORT (the same " +
            "through grpc-java's channel on reverb-grpc) or grpc://HOST:PORT (a gRPC server; plaintext unless --tls). " +
            "inproc:// lives in one process: not reachable from this tool.")
        String uri;

        @Option(names = "--protoset", paramLabel = "FILE", description = "Descriptors from this binary " +
            "FileDescriptorSet (grpcurl's -protoset; protoc --include_imports --descriptor_set_out=FILE) instead of " +
            "the server's reflection service.")
        Path protoset;

        @Option(names = "--proto", paramLabel = "FILE", description = "Descriptors from this .proto file " +
            "(repeatable; grpcurl's -proto) instead of the server's reflection service, compiled by protoc: the one " +
            "the build copied to benchmarks/target/protoc/, else --protoc, $PROTOC, Maven's local repository, the " +
            "PATH. The well-known types (google/protobuf/*.proto) need no import path.")
        List<Path> protos = new ArrayList<>();

        @Option(names = {"-I", "--import-path"}, paramLabel = "DIR", description = "Where --proto files and their " +
            "imports are looked for (repeatable; protoc's -I). Default: each --proto file's directory.")
        List<Path> importPaths = new ArrayList<>();

        @Option(names = "--protoc", paramLabel = "PATH", description = "The protoc executable for --proto.")
        Path protoc;

        @Option(names = "--deadline", paramLabel = "DURATION", converter = DurationConverter.class,
            description = "The call's deadline, and each reflection request's (default for those: 10s), e.g. 5s, " +
                "250ms.")
        Duration deadline;

        @Mixin
        ConnectionSecurity security = new ConnectionSecurity();

        CliTarget connect(final CommandLine line)
        {
            return ReverbCli.connect(uri, security, line);
        }

        DescriptorSource descriptors(final CliTarget target, final CommandLine line)
        {
            return descriptorSource(protoset, protos, importPaths, protoc, line,
                () -> new ReflectionSource(target, uri, deadline != null ? deadline : REFLECTION_DEADLINE));
        }
    }

    /**
     * Where descriptors come from, as reverb-cli's and reverb-bench's options say.
     *
     * @param protoset    a protoset file, or null.
     * @param protos      {@code .proto} files, or none.
     * @param importPaths protoc's import paths for them.
     * @param protoc      the protoc executable, or null to look for one.
     * @param line        the command line, for usage errors.
     * @param reflection  the server's reflection service, when neither files nor a protoset are given.
     * @return the source.
     * @throws ParameterException if both a protoset and {@code .proto} files are given, or import paths without files.
     */
    public static DescriptorSource descriptorSource(final Path protoset, final List<Path> protos,
        final List<Path> importPaths, final Path protoc, final CommandLine line,
        final Supplier<DescriptorSource> reflection)
    {
        if (protoset != null && !protos.isEmpty())
        {
            throw new ParameterException(line, "give --protoset or --proto, not both");
        }
        if (protos.isEmpty() && (!importPaths.isEmpty() || protoc != null))
        {
            throw new ParameterException(line, "-I/--import-path and --protoc go with --proto FILE");
        }
        if (protoset != null)
        {
            return new ProtosetSource(protoset);
        }
        if (!protos.isEmpty())
        {
            return new ProtosetSource(Protoc.locate(protoc).compile(protos, importPaths), ".proto files " + protos);
        }
        return reflection.get();
    }

    /**
     * A client for reverb-cli: grpc-java over Netty for {@code grpc://HOST:PORT}, grpc-java over a Reverb transport
     * (reverb-grpc) for {@code grpc+shm://NAME}, {@code grpc+tcp://HOST:PORT}, ..., Reverb's own channel otherwise.
     *
     * @param uri  the server's address.
     * @param line the command line, for usage errors.
     * @return the target.
     * @throws ParameterException if the address is malformed or in-process only.
     */
    public static CliTarget connect(final String uri, final CommandLine line)
    {
        return connect(uri, new ConnectionSecurity(), line);
    }

    /**
     * {@link #connect(String, CommandLine)} with a token or TLS.
     *
     * @param uri      the server's address.
     * @param security the {@code --token} and {@code --tls*} options.
     * @param line     the command line, for usage errors.
     * @return the target.
     * @throws ParameterException if the address is malformed or in-process only, or the options do not apply to it.
     */
    static CliTarget connect(final String uri, final ConnectionSecurity security, final CommandLine line)
    {
        final String scheme = uri.contains("://") ? uri.substring(0, uri.indexOf("://")).toLowerCase(Locale.ROOT)
            : "";
        if ("inproc".equals(scheme) || "grpc+inproc".equals(scheme))
        {
            throw new ParameterException(line, "inproc:// lives in one process: use shm:// or tcp:// to reach " +
                "a server from reverb-cli");
        }
        if ("grpc".equals(scheme))
        {
            final URI parsed;
            try
            {
                parsed = new URI(uri);
            }
            catch (final URISyntaxException ex)
            {
                throw new ParameterException(line, "bad URI '" + uri + "': " + ex.getMessage());
            }
            if (parsed.getHost() == null || parsed.getPort() <= 0)
            {
                throw new ParameterException(line, "grpc:// needs a host and a port: grpc://HOST:PORT");
            }
            security.check(scheme, line);
            return new GrpcCliTarget(parsed.getHost(), parsed.getPort(), security.grpcCredentials());
        }
        security.check(scheme, line);
        try
        {
            if (scheme.startsWith(GRPC_OVER_REVERB))
            {
                return GrpcCliTarget.overReverb(uri.substring(GRPC_OVER_REVERB.length()), security.engineConfig());
            }
            return new ReverbCliTarget(uri, security.engineConfig());
        }
        catch (final IllegalArgumentException ex)
        {
            throw new ParameterException(line, "bad URI '" + uri + "': " + ex.getMessage());
        }
    }

    /**
     * Picocli's converter for {@link #parseDuration(String)}.
     */
    static final class DurationConverter implements CommandLine.ITypeConverter<Duration>
    {
        @Override
        public Duration convert(final String value)
        {
            try
            {
                return parseDuration(value);
            }
            catch (final IllegalArgumentException ex)
            {
                throw new CommandLine.TypeConversionException(ex.getMessage());
            }
        }
    }

    /**
     * {@code list URI [pkg.Service]}.
     */
    @Command(name = "list", mixinStandardHelpOptions = true,
        description = "Lists the server's services, or one service's methods (pkg.Service.Method), one a line, " +
            "sorted.")
    static final class ListVerb implements Runnable
    {
        private final PrintWriter out;

        @Spec
        private CommandSpec spec;

        @Mixin
        private Common common;

        @Parameters(index = "1", arity = "0..1", paramLabel = "SERVICE", description = "A service's full name.")
        private String service;

        ListVerb(final PrintWriter out)
        {
            this.out = out;
        }

        @Override
        public void run()
        {
            try (CliTarget target = common.connect(spec.commandLine()))
            {
                final DescriptorSource source = common.descriptors(target, spec.commandLine());
                final List<String> names = new ArrayList<>();
                if (service == null)
                {
                    names.addAll(source.listServices());
                }
                else
                {
                    final GenericDescriptor symbol = Symbols.find(source.fileContaining(service), service);
                    if (!(symbol instanceof ServiceDescriptor))
                    {
                        throw new ParameterException(spec.commandLine(), service + " is not a service");
                    }
                    for (final MethodDescriptor method : ((ServiceDescriptor)symbol).getMethods())
                    {
                        names.add(method.getFullName());
                    }
                }
                names.sort(null);
                names.forEach(name -> out.println(Printable.name(name))); // the server's words: one line each
                out.flush();
            }
        }
    }

    /**
     * {@code describe URI [SYMBOL]}.
     */
    @Command(name = "describe", mixinStandardHelpOptions = true,
        description = "Prints the declaration of a service, method (pkg.Service.Method), message or enum in .proto " +
            "syntax; with no symbol, of every service.")
    static final class DescribeVerb implements Runnable
    {
        private final PrintWriter out;

        @Spec
        private CommandSpec spec;

        @Mixin
        private Common common;

        @Parameters(index = "1", arity = "0..1", paramLabel = "SYMBOL",
            description = "pkg.Service, pkg.Service.Method, pkg.Message or pkg.Enum.")
        private String symbol;

        DescribeVerb(final PrintWriter out)
        {
            this.out = out;
        }

        @Override
        public void run()
        {
            try (CliTarget target = common.connect(spec.commandLine()))
            {
                final DescriptorSource source = common.descriptors(target, spec.commandLine());
                final List<String> symbols = new ArrayList<>();
                if (symbol == null)
                {
                    symbols.addAll(source.listServices());
                    symbols.sort(null);
                }
                else
                {
                    symbols.add(symbol.replace('/', '.'));
                }
                for (final String name : symbols)
                {
                    final GenericDescriptor found = Symbols.find(source.fileContaining(name), name);
                    if (found == null)
                    {
                        throw new CliException(CliException.CALL_FAILED, "ERROR: NOT_FOUND: " +
                            Printable.name(name) + " is not a service, method, message or enum");
                    }
                    out.print(Printable.text(Describer.describe(found)));
                }
                out.flush();
            }
        }
    }

    /**
     * {@code call URI pkg.Service/Method [-d JSON]}.
     */
    @Command(name = "call", mixinStandardHelpOptions = true,
        description = "Calls a unary or server-streaming method with a JSON request (protobuf's JSON mapping; {} " +
            "if -d is not given) and prints each response as JSON on stdout.")
    static final class CallVerb implements Runnable
    {
        private final InputStream in;
        private final PrintWriter out;

        @Spec
        private CommandSpec spec;

        @Mixin
        private Common common;

        @Parameters(index = "1", paramLabel = "METHOD", description = "pkg.Service/Method (or pkg.Service.Method).")
        private String method;

        @Option(names = {"-d", "--data"}, paramLabel = "JSON",
            description = "The request as JSON; @FILE reads it from a file, @- from stdin.")
        private String data;

        @Option(names = "--max-responses", paramLabel = "N", defaultValue = "" + DEFAULT_MAX_RESPONSES,
            description = "The most responses a call may print (default: ${DEFAULT-VALUE}): one more cancels the " +
                "call, says so on stderr and exits 1, so a server streaming without end stops here.")
        private long maxResponses;

        @Option(names = {"-H", "--header"}, paramLabel = "'NAME: VALUE'",
            description = "Metadata sent with the call; repeatable. A NAME ending in -bin takes a base64 VALUE.")
        private List<String> headers = new ArrayList<>();

        CallVerb(final InputStream in, final PrintWriter out)
        {
            this.in = in;
            this.out = out;
        }

        @Override
        public void run()
        {
            final CommandLine line = spec.commandLine();
            if (maxResponses < 1)
            {
                throw new ParameterException(line, "--max-responses must be at least 1: " + maxResponses);
            }
            if (DynamicMethod.splitName(method) == null)
            {
                throw new ParameterException(line, "METHOD must be pkg.Service/Method: '" + method + "'");
            }
            final List<String[]> metadata = parseHeaders(line);
            final String json = readData(line);
            try (CliTarget target = common.connect(line))
            {
                final DescriptorSource source = common.descriptors(target, line);
                final DynamicMethod dynamic = DynamicMethod.resolve(source, method);
                final MethodDescriptor descriptor = dynamic.descriptor();
                if (descriptor.isClientStreaming())
                {
                    throw new ParameterException(line, dynamic.fullMethodName() + " is " + dynamic.type() +
                        ": reverb-cli calls unary and server-streaming methods only");
                }
                final DynamicMessage request;
                try
                {
                    request = dynamic.parseRequest(json);
                }
                catch (final InvalidProtocolBufferException | RuntimeException ex)
                {
                    throw new CliException(CliException.USAGE, "ERROR: bad request JSON for " +
                        descriptor.getInputType().getFullName() + ": " + Printable.name(ex.getMessage()));
                }
                final long[] count = {0};
                try
                {
                    target.call(dynamic, request, metadata, common.deadline, response ->
                    {
                        if (++count[0] > maxResponses)
                        {
                            // thrown on the calling thread: the target cancels the call and rethrows this
                            throw new CliException(CliException.CALL_FAILED, "ERROR: more than " + maxResponses +
                                " responses (--max-responses); the call was cancelled");
                        }
                        print(dynamic, response);
                    });
                }
                catch (final CliTarget.CallFailure failure)
                {
                    // no connection, and so no response: "cannot connect" (3), as list and describe say it; a
                    // server that answered UNAVAILABLE is a failed call (1)
                    final int code = failure.notConnected() && count[0] == 0 ? CliException.NO_CONNECTION :
                        CliException.CALL_FAILED;
                    throw new CliException(code, "ERROR: " + failure.code() + ": " +
                        Printable.name(failure.description())); // the server's words: on one line
                }
            }
        }

        private void print(final DynamicMethod dynamic, final DynamicMessage response)
        {
            try
            {
                out.println(Printable.text(dynamic.toJson(response)));
                out.flush();
            }
            catch (final InvalidProtocolBufferException ex)
            {
                throw new CliException(CliException.CALL_FAILED, "ERROR: a response does not print as JSON: " +
                    Printable.name(ex.getMessage())); // it quotes the server's type URL
            }
        }

        private List<String[]> parseHeaders(final CommandLine line)
        {
            final List<String[]> parsed = new ArrayList<>();
            for (final String header : headers)
            {
                final int colon = header.indexOf(':');
                final String name = colon > 0 ? header.substring(0, colon).trim().toLowerCase(Locale.ROOT) : "";
                if (name.isEmpty())
                {
                    throw new ParameterException(line, "-H takes 'NAME: VALUE': '" + header + "'");
                }
                if (!HEADER_NAME.matcher(name).matches())
                {
                    throw new ParameterException(line, "-H: a metadata name has only a-z, 0-9, '-', '_' and '.': '" +
                        name + "'");
                }
                final String value = header.substring(colon + 1).trim();
                if (name.endsWith("-bin"))
                {
                    try
                    {
                        Base64.getDecoder().decode(value);
                    }
                    catch (final IllegalArgumentException ex)
                    {
                        throw new ParameterException(line, "-H " + name + ": a -bin value must be base64: " +
                            ex.getMessage());
                    }
                }
                parsed.add(new String[] {name, value});
            }
            return parsed;
        }

        private String readData(final CommandLine line)
        {
            if (data == null)
            {
                return "{}";
            }
            if (!data.startsWith("@"))
            {
                return data;
            }
            try
            {
                if ("@-".equals(data))
                {
                    return new String(in.readAllBytes(), StandardCharsets.UTF_8);
                }
                return Files.readString(Path.of(data.substring(1)), StandardCharsets.UTF_8);
            }
            catch (final IOException ex)
            {
                throw new ParameterException(line, "cannot read -d " + data + ": " + ex);
            }
        }
    }
}
