package io.reverb.bench;

import com.google.protobuf.DynamicMessage;
import com.google.protobuf.InvalidProtocolBufferException;
import io.reverb.bench.BenchOptions.ServerPlacement;
import io.reverb.bench.cli.CliException;
import io.reverb.bench.cli.CliTarget;
import io.reverb.bench.cli.DescriptorSource;
import io.reverb.bench.cli.DynamicMethod;
import io.reverb.bench.cli.ReflectionSource;
import io.reverb.bench.cli.ReverbCli;
import io.reverb.bench.load.CallKind;
import io.reverb.bench.load.LoadGenerator;
import io.reverb.bench.load.LoadSpec;
import io.reverb.bench.load.RunResult;
import io.reverb.bench.report.HtmlReport;
import io.reverb.bench.report.JsonReport;
import io.reverb.bench.target.DynamicClient;
import io.reverb.bench.target.TargetSettings;
import io.reverb.bench.target.Targets;
import io.reverb.rpc.MethodDescriptor.MethodType;
import java.io.InputStream;
import java.io.PrintStream;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import picocli.CommandLine;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.ParameterException;

/**
 * reverb-bench against any service ({@code --call pkg.Service/Method -d JSON}), as ghz does it: a running server
 * (a Reverb URI, or any gRPC server at {@code grpc://HOST:PORT}), a method known from the server's reflection service,
 * a protoset or {@code .proto} files, one request from JSON sent by every call, with metadata and a deadline; the
 * same load generator (closed loop, or open loop with {@code --rps}), report, HTML plot and JSON/CSV as the echo
 * benchmark. One run per {@code --uri}, so a Reverb server and a grpc-java server of the same service compare side by
 * side. The tool starts no server here ({@code --server none}).
 */
final class CallBench
{
    /** The help text of this mode, printed after the echo benchmark's. */
    static final String USAGE = """

        Any service (a running server; --server none):
          --call pkg.Svc/Method  benchmark this unary or server-streaming method instead of the echo service
          -d, --data JSON        the request (protobuf's JSON mapping; @FILE reads a file, @- stdin; default {})
          --data-file FILE       the request's JSON from a file (ghz's -D)
          --reflect              descriptors from the server's reflection service (the default), or
          --protoset FILE        from a binary FileDescriptorSet (protoc --include_imports --descriptor_set_out), or
          --proto FILE           from .proto files (repeatable), compiled by protoc (the build fetches it; --protoc
                                 PATH to choose), with -I, --import-path DIR (repeatable, or ghz's -i A,B; default:
                                 the file's directory)
          -m, --metadata JSON    metadata sent with every call, e.g. '{"x-user": "ann"}'
          --connections N        channels per target (default 1); the -c lanes are spread over them
          --deadline DURATION    each call's deadline (default 10s)
          The load and output options above apply (-c, -n, -z, --rps, --warmup, --rounds, --format, -o, --html).
          e.g. reverb-bench --uri shm://shop --call shop.Shop/GetItem -d '{"name":"pen"}' -c 4 -n 10000
        """;

    private CallBench()
    {
    }

    /**
     * Runs the benchmark of {@code o.call.method} against each target.
     *
     * @param o       the options.
     * @param command the command line, for the HTML report.
     * @param in      what {@code -d @-} reads.
     * @param out     where results go.
     * @param err     where progress and errors go.
     * @return 0, 1 if a run had no OK call or the method could not be resolved, 2 for a usage error.
     * @throws Exception if a run fails.
     */
    static int run(final BenchOptions o, final String command, final InputStream in, final PrintStream out,
        final PrintStream err) throws Exception
    {
        final CallBenchOptions c = o.call;
        if (o.uris.isEmpty())
        {
            throw new IllegalArgumentException("--call needs the server: --uri URI (a running server; reverb-bench " +
                "does not start one for --call)");
        }
        if (o.serverGiven && o.server != ServerPlacement.NONE)
        {
            throw new IllegalArgumentException("--call benchmarks a running server: --server none only");
        }
        if (o.echoShapeGiven)
        {
            throw new IllegalArgumentException("--payload, --kind and --stream-messages are the echo service's: " +
                "with --call, the request is -d and the method decides the kind");
        }
        if (o.pollingModes.size() > 1)
        {
            throw new IllegalArgumentException("--call takes one --polling mode (it applies to the client only)");
        }
        final String json = c.requestJson(in);
        final List<String[]> headers = c.headers();
        final Duration deadline = Duration.ofNanos(o.deadlineNanos);
        final long duration = o.totalCalls == 0 && o.durationNanos == 0 ? TimeUnit.SECONDS.toNanos(10) : o.durationNanos;
        final List<RunResult> runs = new ArrayList<>();
        for (final String path : o.inputs)
        {
            runs.addAll(JsonReport.read(Files.readString(Path.of(path))));
        }
        try
        {
            // files and protosets are read once; reflection asks each server
            final DescriptorSource files = c.protoset != null || !c.protos.isEmpty() ? descriptors(c, null, null,
                deadline) : null;
            for (final String text : o.uris)
            {
                if (Targets.isInProcessOnly(URI.create(text)))
                {
                    throw new IllegalArgumentException(text + " lives in one process: --call needs a server " +
                        "reachable from here (shm://, tcp://, rdma://, grpc://HOST:PORT, grpc+shm://...)");
                }
            }
            for (int round = 1; round <= o.rounds; round++)
            {
                for (final String text : o.uris)
                {
                    final RunResult r = runOne(URI.create(text), files, json, headers, deadline, duration, o, err);
                    r.markRound(round, o.rounds);
                    runs.add(r);
                }
            }
        }
        catch (final CliException ex)
        {
            err.println(ex.getMessage());
            return ex.exitCode() == CliException.USAGE ? 2 : 1;
        }
        catch (final ParameterException ex)
        {
            throw new IllegalArgumentException(ex.getMessage(), ex);
        }
        ReverbBench.emit(runs, o, out, err);
        if (o.html != null)
        {
            Files.writeString(Path.of(o.html), HtmlReport.write(runs, "reverb-bench: " + c.method, command));
            err.println("HTML report: " + Path.of(o.html).toAbsolutePath());
        }
        for (final RunResult r : runs)
        {
            if (r.ok == 0)
            {
                return 1;
            }
        }
        return 0;
    }

    private static RunResult runOne(final URI uri, final DescriptorSource files, final String json,
        final List<String[]> headers, final Duration deadline, final long duration, final BenchOptions o,
        final PrintStream err) throws Exception
    {
        final CallBenchOptions c = o.call;
        final DynamicMethod method;
        final DynamicMessage request;
        if (files != null)
        {
            method = DynamicMethod.resolve(files, c.method);
        }
        else
        {
            try (CliTarget reflection = ReverbCli.connect(uri.toString(), usageLine()))
            {
                method = DynamicMethod.resolve(descriptors(c, reflection, uri.toString(), deadline), c.method);
            }
        }
        if (method.type() != MethodType.UNARY && method.type() != MethodType.SERVER_STREAMING)
        {
            throw new IllegalArgumentException(method.fullMethodName() + " is " + method.type() +
                ": reverb-bench calls unary and server-streaming methods only");
        }
        try
        {
            request = method.parseRequest(json);
        }
        catch (final InvalidProtocolBufferException | RuntimeException ex)
        {
            throw new IllegalArgumentException("bad request JSON for " +
                method.descriptor().getInputType().getFullName() + ": " + ex.getMessage());
        }
        final CallKind kind = method.type() == MethodType.UNARY ? CallKind.UNARY : CallKind.SERVER_STREAMING;
        final LoadSpec spec = new LoadSpec(kind, request.getSerializedSize(), 1, o.concurrency, o.totalCalls,
            duration, o.rps, o.progress);
        final String polling = o.pollingModes.isEmpty() ? null : o.pollingModes.get(0);
        final String label = Targets.label(uri) + " " + method.fullMethodName();
        err.printf(Locale.ROOT, "-- %s: %s, %s, c=%d, %s, %d connection(s), after %.1f s warm-up%n", label, uri,
            kind.cliName(), o.concurrency, spec.totalCalls() > 0 ? String.format(Locale.ROOT, "%,d calls",
                spec.totalCalls()) : String.format(Locale.ROOT, "%.1f s", duration / 1e9), c.connections,
            o.warmupNanos / 1e9);
        try (DynamicClient client = DynamicClient.connect(uri, method, request, headers, deadline, c.connections,
            new TargetSettings(polling)))
        {
            if (o.warmupNanos > 0)
            {
                new LoadGenerator(client, spec.withLength(0, o.warmupNanos, false), err, label).run();
            }
            final RunResult result = new LoadGenerator(client, spec, err, label).run();
            result.label = label;
            result.framework = client.framework();
            result.uri = uri.toString();
            result.server = ServerPlacement.NONE.cliName();
            result.polling = polling == null ? "" : polling;
            // messages per call are the server's to decide: report the mean over the OK calls
            result.streamMessages = kind == CallKind.UNARY || result.ok == 0 ? 1
                : (int)Math.max(1, Math.round((double)result.messages / result.ok));
            if (result.ok < result.count && client.firstFailure() != null)
            {
                err.println("-- " + label + ": " + (result.count - result.ok) + " of " + result.count +
                    " calls failed; the first: " + client.firstFailure());
            }
            return result;
        }
    }

    private static DescriptorSource descriptors(final CallBenchOptions c, final CliTarget reflection,
        final String address, final Duration deadline)
    {
        try
        {
            return ReverbCli.descriptorSource(c.protoset, c.protos, c.importPaths, c.protoc, usageLine(),
                () -> new ReflectionSource(reflection, address, deadline));
        }
        catch (final ParameterException ex)
        {
            throw new IllegalArgumentException(ex.getMessage(), ex);
        }
    }

    /** For the usage errors of reverb-cli's helpers, which name a command line. */
    private static CommandLine usageLine()
    {
        return new CommandLine(CommandSpec.create());
    }
}
