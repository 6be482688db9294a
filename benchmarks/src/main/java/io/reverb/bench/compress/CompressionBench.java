package io.reverb.bench.compress;

import com.google.protobuf.ByteString;
import com.google.protobuf.BytesValue;
import io.reverb.rdma.engine.ConnectionStats;
import io.reverb.rdma.engine.EngineConfig;
import io.reverb.rdma.engine.RdmaEngine;
import io.reverb.rdma.rpc.EngineOptions;
import io.reverb.rpc.CallOptions;
import io.reverb.rpc.Marshaller;
import io.reverb.rpc.Metadata;
import io.reverb.rpc.MethodDescriptor;
import io.reverb.rpc.RpcChannel;
import io.reverb.rpc.RpcContext;
import io.reverb.rpc.RpcServer;
import io.reverb.rpc.ServiceDefinition;
import io.reverb.rpc.protobuf.ProtoMarshaller;
import io.reverb.rpc.stub.ClientCalls;
import io.reverb.rpc.stub.ServerCalls;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.Locale;
import java.util.Random;
import java.util.zip.GZIPOutputStream;

/**
 * Unary echo of a compressible message (JSON-like records, about 1 MiB by default) over one Reverb URI, without and
 * with gzip, one call outstanding: calls per second, the payload's throughput, the bytes the client's engine put on
 * the wire and took off it per call, and the median call time. The server echoes and compresses its response with
 * the codec the request names. Run by {@code bin/compression-bench} across two network namespaces; by hand:
 *
 * <pre>
 * java -cp benchmarks/target/reverb-bench.jar io.reverb.bench.compress.CompressionBench server tcp://127.0.0.1:7300
 * java -cp benchmarks/target/reverb-bench.jar io.reverb.bench.compress.CompressionBench client tcp://127.0.0.1:7300 \
 *     [size-bytes] [calls] [warm-up calls]
 * </pre>
 *
 * A figure taken on a machine with other work running is a smoke run, not a result.
 */
public final class CompressionBench
{
    private static final Marshaller<BytesValue> BYTES = ProtoMarshaller.of(BytesValue.getDefaultInstance());
    private static final MethodDescriptor<BytesValue, BytesValue> ECHO = MethodDescriptor.<BytesValue, BytesValue>newBuilder()
        .type(MethodDescriptor.MethodType.UNARY)
        .fullMethodName(MethodDescriptor.generateFullMethodName("reverb.bench.Compression", "Echo"))
        .requestMarshaller(BYTES)
        .responseMarshaller(BYTES)
        .build();
    private static final Metadata.Key<String> RESPOND_WITH =
        Metadata.Key.of("x-bench-compression", Metadata.ASCII_STRING_MARSHALLER);

    private CompressionBench()
    {
    }

    /**
     * @param args {@code server URI [go-file]} or {@code client URI [size] [calls] [warm-up]}.
     * @throws Exception on failure.
     */
    public static void main(final String[] args) throws Exception
    {
        if (args.length >= 2 && "server".equals(args[0]))
        {
            server(args[1], args.length > 2 ? Path.of(args[2]) : null);
        }
        else if (args.length >= 2 && "client".equals(args[0]))
        {
            client(args[1], args.length > 2 ? Integer.parseInt(args[2]) : 1 << 20,
                args.length > 3 ? Integer.parseInt(args[3]) : 200, args.length > 4 ? Integer.parseInt(args[4]) : 50);
        }
        else
        {
            System.err.println("usage: CompressionBench server URI [go-file] | client URI [size-bytes] [calls] [warm-up]");
            System.exit(2);
        }
    }

    private static void server(final String uri, final Path goFile) throws Exception
    {
        final ServiceDefinition service = ServiceDefinition.builder("reverb.bench.Compression")
            .addMethod(ECHO, ServerCalls.unary(request -> RpcContext.current().map(context ->
            {
                final String codec = context.metadata().get(RESPOND_WITH);
                if (codec != null)
                {
                    context.responseCompression(codec);
                }
                return request;
            })))
            .build();
        try (RpcServer server = RpcServer.builder(uri).addService(service).maxInboundMessageSize(64 << 20).build().start())
        {
            System.out.println("compression-bench server listening on " + uri);
            if (goFile != null)
            {
                Files.writeString(goFile, "go\n");
            }
            // until stdin closes (the script keeps it open) or the process is killed
            final InputStream in = System.in;
            while (in.read() >= 0)
            {
                Thread.onSpinWait();
            }
        }
    }

    /**
     * @param size bytes of the message's value.
     * @return JSON-like records with random numbers: gzip takes them to about a fifth, not to nothing.
     */
    static BytesValue records(final int size)
    {
        final Random random = new Random(20261202);
        final StringBuilder text = new StringBuilder(size + 256);
        final String[] tags = {"alpha", "beta", "gamma", "delta", "omega"};
        while (text.length() < size)
        {
            final int id = random.nextInt(1_000_000);
            text.append("{\"id\":").append(id).append(",\"name\":\"user-").append(id)
                .append("\",\"score\":").append(String.format(Locale.ROOT, "%.4f", random.nextDouble()))
                .append(",\"tag\":\"").append(tags[random.nextInt(tags.length)]).append("\"}\n");
        }
        final byte[] bytes = Arrays.copyOf(text.toString().getBytes(StandardCharsets.US_ASCII), size);
        return BytesValue.of(ByteString.copyFrom(bytes));
    }

    private static void client(final String uri, final int size, final int calls, final int warmup) throws Exception
    {
        final BytesValue message = records(size);
        final ByteArrayOutputStream gz = new ByteArrayOutputStream();
        try (GZIPOutputStream out = new GZIPOutputStream(gz))
        {
            message.writeTo(out);
        }
        System.out.printf(Locale.ROOT, "message: %d bytes serialized, %d bytes gzipped (ratio %.1f)%n",
            message.getSerializedSize(), gz.size(), (double)message.getSerializedSize() / gz.size());
        System.out.printf(Locale.ROOT, "%-9s %7s %10s %10s %14s %12s%n", "codec", "calls", "calls/s", "MiB/s",
            "wire B/call", "p50 us");
        for (final String codec : new String[] {"identity", "gzip"})
        {
            try (RdmaEngine engine = RdmaEngine.open(scheme(uri), new EngineConfig().name("compression-bench-" + codec));
                RpcChannel channel = RpcChannel.builder(uri).transportOptions(EngineOptions.of(engine))
                    .maxInboundMessageSize(64 << 20).build())
            {
                final Metadata respondWith = new Metadata();
                respondWith.put(RESPOND_WITH, codec);
                final CallOptions options = CallOptions.DEFAULT.withCompression(codec).withMetadata(respondWith)
                    .withDeadlineAfter(Duration.ofMinutes(5));
                for (int i = 0; i < warmup; i++)
                {
                    check(ClientCalls.unary(channel, ECHO, options, message).block(), message);
                }
                final ConnectionStats before = engine.stats();
                final long[] nanos = new long[calls];
                final long start = System.nanoTime();
                for (int i = 0; i < calls; i++)
                {
                    final long t0 = System.nanoTime();
                    check(ClientCalls.unary(channel, ECHO, options, message).block(), message);
                    nanos[i] = System.nanoTime() - t0;
                }
                final long elapsed = System.nanoTime() - start;
                final ConnectionStats after = engine.stats();
                final long wire = wireBytes(after) - wireBytes(before);
                Arrays.sort(nanos);
                final double seconds = elapsed / 1e9;
                System.out.printf(Locale.ROOT, "%-9s %7d %10.1f %10.1f %14d %12.0f%n", codec, calls, calls / seconds,
                    2.0 * calls * message.getSerializedSize() / seconds / (1 << 20), wire / calls, nanos[calls / 2] / 1e3);
            }
        }
        System.out.println("MiB/s counts the payload both ways (request and response); wire B/call is what the " +
            "client's engine sent and received per call (eager and rendezvous)");
    }

    private static long wireBytes(final ConnectionStats stats)
    {
        return stats.eagerBytesSent() + stats.rendezvousBytesSent() + stats.eagerBytesReceived() +
            stats.rendezvousBytesReceived();
    }

    private static String scheme(final String uri)
    {
        return uri.substring(0, uri.indexOf(':'));
    }

    private static void check(final BytesValue response, final BytesValue expected) throws IOException
    {
        if (response == null || !response.equals(expected))
        {
            throw new IOException("the echo differs from the request");
        }
    }
}
