package io.reverb.bench.target;

import com.google.protobuf.BytesValue;
import io.reverb.bench.EchoService;
import io.reverb.rpc.CallOptions;
import io.reverb.rpc.MethodDescriptor;
import io.reverb.rpc.RpcChannel;
import io.reverb.rpc.RpcServer;
import io.reverb.rpc.ServiceDefinition;
import io.reverb.rpc.Status;
import io.reverb.rpc.protobuf.ProtoMarshaller;
import io.reverb.rpc.stub.ClientCalls;
import io.reverb.rpc.stub.ServerCalls;
import io.reverb.rpc.transport.Transports;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

import java.net.URI;
import java.time.Duration;
import java.util.function.Consumer;

/**
 * Reverb over any of its transports ({@code shm://}, {@code tcp://}, {@code rdma://},
 * {@code inproc://}), through rpc-core's public API with hand-built descriptors; {@code tcps://} is {@code tcp://}
 * inside TLS ({@link BenchTls}).
 *
 * <p>A polling mode from {@link TargetSettings} is passed as the URI query parameter
 * {@code polling=MODE} to transports that poll completions (not {@code inproc://}), unless the
 * URI already names one; the transport opens an engine of that mode (an engine per mode, none configured per JVM).
 *
 * <p>The query parameter {@code aliasing=true} (read here, not passed to the transport) marshals with
 * {@link ProtoMarshaller#aliasing}: large messages are parsed from pooled arrays, on both sides. The transport's
 * {@code directWrite=true|false} (shm: large messages written straight into the receiver's grant, or copied there
 * by the fabric) is passed to the transport on both sides: the server's reported address keeps it.
 */
public final class ReverbTarget implements Target
{
    /** {@code Echo} as a Reverb method descriptor, marshalled with protobuf. */
    public static final MethodDescriptor<BytesValue, BytesValue> ECHO_METHOD =
        MethodDescriptor.<BytesValue, BytesValue>newBuilder()
            .type(MethodDescriptor.MethodType.UNARY)
            .fullMethodName(EchoService.ECHO_FULL_NAME)
            .requestMarshaller(ProtoMarshaller.of(BytesValue.getDefaultInstance()))
            .responseMarshaller(ProtoMarshaller.of(BytesValue.getDefaultInstance()))
            .build();

    /** {@code Stream} as a Reverb method descriptor, marshalled with protobuf. */
    public static final MethodDescriptor<BytesValue, BytesValue> STREAM_METHOD =
        MethodDescriptor.<BytesValue, BytesValue>newBuilder()
            .type(MethodDescriptor.MethodType.SERVER_STREAMING)
            .fullMethodName(EchoService.STREAM_FULL_NAME)
            .requestMarshaller(ProtoMarshaller.of(BytesValue.getDefaultInstance()))
            .responseMarshaller(ProtoMarshaller.of(BytesValue.getDefaultInstance()))
            .build();

    /** {@code Echo}, marshalled with {@link ProtoMarshaller#aliasing} (the URI's {@code aliasing=true}). */
    public static final MethodDescriptor<BytesValue, BytesValue> ECHO_METHOD_ALIASING = ECHO_METHOD.toBuilder()
        .requestMarshaller(ProtoMarshaller.aliasing(BytesValue.getDefaultInstance()))
        .responseMarshaller(ProtoMarshaller.aliasing(BytesValue.getDefaultInstance()))
        .build();

    /** {@code Stream}, marshalled with {@link ProtoMarshaller#aliasing} (the URI's {@code aliasing=true}). */
    public static final MethodDescriptor<BytesValue, BytesValue> STREAM_METHOD_ALIASING = STREAM_METHOD.toBuilder()
        .requestMarshaller(ProtoMarshaller.aliasing(BytesValue.getDefaultInstance()))
        .responseMarshaller(ProtoMarshaller.aliasing(BytesValue.getDefaultInstance()))
        .build();

    private static final String ALIASING = "aliasing=true";
    private static final int MAX_MESSAGE = 64 * 1024 * 1024;

    @Override
    public String framework()
    {
        return "reverb";
    }

    @Override
    public boolean handles(final URI uri)
    {
        final String scheme = uri.getScheme();
        return scheme != null && !GrpcTarget.NETTY_SCHEME.equals(scheme) && !GrpcTarget.INPROC_SCHEME.equals(scheme) &&
            !GrpcTarget.isOverReverb(uri);
    }

    /**
     * @return the echo service as a Reverb service definition.
     */
    public static ServiceDefinition serviceDefinition()
    {
        return serviceDefinition(false);
    }

    /**
     * @param aliasing true to marshal with {@link ProtoMarshaller#aliasing}.
     * @return the echo service as a Reverb service definition.
     */
    public static ServiceDefinition serviceDefinition(final boolean aliasing)
    {
        final EchoService.StreamReplies replies = new EchoService.StreamReplies();
        return ServiceDefinition.builder(EchoService.SERVICE_NAME)
            .addMethod(aliasing ? ECHO_METHOD_ALIASING : ECHO_METHOD, ServerCalls.unary(Mono::just))
            .addMethod(aliasing ? STREAM_METHOD_ALIASING : STREAM_METHOD, ServerCalls.serverStreaming(request ->
            {
                final EchoService.StreamRequest ask = EchoService.StreamRequest.decode(request);
                final BytesValue message = replies.ofSize(ask.size());
                return Flux.range(0, ask.count()).map(i -> message);
            }))
            .build();
    }

    @Override
    public BenchServer startServer(final URI uri, final TargetSettings settings)
    {
        final RpcServer.Builder builder = RpcServer.builder(builderAddress(uri, settings));
        if (BenchTls.isTls(uri))
        {
            builder.transportOptions(BenchTls.serverOptions());
        }
        final RpcServer server = builder
            .addService(serviceDefinition(isAliasing(uri)))
            .maxInboundMessageSize(MAX_MESSAGE)
            .shutdownGracePeriod(Duration.ofSeconds(1))
            .build()
            .start();
        final String address = server.address();
        // clients connect to the reported address: it keeps asking for aliasing, which only this target reads
        final String plain = address == null ? uri.toString() : BenchTls.isTls(uri) ? BenchTls.asTls(address) : address;
        final String directWrite = directWriteParameter(uri);
        String reported = address != null && isAliasing(uri) ? plain + (plain.contains("?") ? "&" : "?") + ALIASING : plain;
        if (address != null && directWrite != null && !reported.contains(directWrite))
        {
            reported = reported + (reported.contains("?") ? "&" : "?") + directWrite;
        }
        return new ReverbServer(server, reported, BenchTls.asTcp(uri));
    }

    @Override
    public EchoClient connect(final URI uri, final TargetSettings settings)
    {
        final RpcChannel.Builder builder = RpcChannel.builder(builderAddress(uri, settings));
        if (BenchTls.isTls(uri))
        {
            builder.transportOptions(BenchTls.clientOptions());
        }
        final RpcChannel channel = builder
            .maxInboundMessageSize(MAX_MESSAGE)
            .build();
        return new ReverbClient(channel, settings.deadline(), isAliasing(uri));
    }

    /** What the server's and the client's builder get: plain tcp for tls, no aliasing, the polling mode added. */
    private static String builderAddress(final URI uri, final TargetSettings settings)
    {
        return withPolling(BenchTls.asTcp(withoutAliasing(uri)), settings).toString();
    }

    /**
     * @param uri a Reverb address.
     * @return true if it asks for {@link ProtoMarshaller#aliasing} ({@code aliasing=true}).
     */
    public static boolean isAliasing(final URI uri)
    {
        return uri.getRawQuery() != null && ("&" + uri.getRawQuery() + "&").contains("&" + ALIASING + "&");
    }

    /**
     * @param uri a Reverb address.
     * @return its {@code directWrite=...} parameter as written, or null.
     */
    public static String directWriteParameter(final URI uri)
    {
        if (uri.getRawQuery() == null)
        {
            return null;
        }
        for (final String part : uri.getRawQuery().split("&"))
        {
            if (part.regionMatches(true, 0, "directWrite=", 0, "directWrite=".length()))
            {
                return part;
            }
        }
        return null;
    }

    /**
     * @param uri a Reverb address.
     * @return the address without {@code aliasing=true}, which only this target reads.
     */
    public static URI withoutAliasing(final URI uri)
    {
        if (!isAliasing(uri))
        {
            return uri;
        }
        final StringBuilder query = new StringBuilder();
        for (final String part : uri.getRawQuery().split("&"))
        {
            if (!part.equals(ALIASING) && !part.isEmpty())
            {
                query.append(query.length() == 0 ? "" : "&").append(part);
            }
        }
        final String text = uri.toString();
        final String base = text.substring(0, text.indexOf('?'));
        return URI.create(query.length() == 0 ? base : base + "?" + query);
    }

    /**
     * @param uri      a Reverb address.
     * @param settings run settings.
     * @return the address with {@code polling=MODE} added when asked for and meaningful.
     */
    public static URI withPolling(final URI uri, final TargetSettings settings)
    {
        if (settings.polling() == null || "inproc".equals(uri.getScheme()) ||
            (uri.getQuery() != null && uri.getQuery().contains("polling=")))
        {
            return uri;
        }
        final String text = uri.toString();
        return URI.create(text + (uri.getRawQuery() == null ? "?" : "&") + "polling=" + settings.polling());
    }

    private record ReverbServer(RpcServer server, String uri, URI listenUri) implements BenchServer
    {
        @Override
        public String resourceUsage()
        {
            return Transports.providerFor(withoutAliasing(listenUri)).resourceUsage().describe();
        }

        @Override
        public void close()
        {
            server.shutdown(Duration.ofSeconds(1));
            try
            {
                server.awaitTermination(Duration.ofSeconds(5));
            }
            catch (final InterruptedException ex)
            {
                Thread.currentThread().interrupt();
            }
        }
    }

    private static final class ReverbClient implements EchoClient
    {
        private final RpcChannel channel;
        private final Duration deadline;
        private final MethodDescriptor<BytesValue, BytesValue> echo;
        private final MethodDescriptor<BytesValue, BytesValue> stream;

        ReverbClient(final RpcChannel channel, final Duration deadline, final boolean aliasing)
        {
            this.channel = channel;
            this.deadline = deadline;
            this.echo = aliasing ? ECHO_METHOD_ALIASING : ECHO_METHOD;
            this.stream = aliasing ? STREAM_METHOD_ALIASING : STREAM_METHOD;
        }

        @Override
        public BytesValue blockingEcho(final BytesValue request)
        {
            // aliasing: the response is valid only inside onNext, so none is returned (the caller only consumes it)
            if (echo == ECHO_METHOD)
            {
                return ClientCalls.unary(channel, echo, CallOptions.DEFAULT, request).block();
            }
            return ClientCalls.unary(channel, echo, CallOptions.DEFAULT, request)
                .map(r -> BytesValue.getDefaultInstance()).block();
        }

        @Override
        public long blockingStream(final BytesValue request)
        {
            final Long count = ClientCalls.serverStreaming(channel, stream, CallOptions.DEFAULT, request)
                .count().block();
            return count == null ? 0 : count;
        }

        @Override
        public Caller newCaller(final CallObserver observer)
        {
            return new ReverbCaller(channel, observer, deadline, echo, stream);
        }

        @Override
        public String fabric()
        {
            return channel.fabric();
        }

        @Override
        public void close()
        {
            channel.close();
        }
    }

    private static final class ReverbCaller implements EchoClient.Caller
    {
        private final RpcChannel channel;
        private final CallObserver observer;
        private final Duration deadline;
        // Bound once: a method reference per call would allocate in the harness, not in Reverb.
        private final Consumer<BytesValue> onMessage = this::onMessage;
        private final Consumer<Throwable> onError = this::onError;
        private final Runnable onComplete = this::onComplete;
        private final MethodDescriptor<BytesValue, BytesValue> echo;
        private final MethodDescriptor<BytesValue, BytesValue> stream;

        ReverbCaller(final RpcChannel channel, final CallObserver observer, final Duration deadline,
            final MethodDescriptor<BytesValue, BytesValue> echo, final MethodDescriptor<BytesValue, BytesValue> stream)
        {
            this.echo = echo;
            this.stream = stream;
            this.channel = channel;
            this.observer = observer;
            this.deadline = deadline;
        }

        /** The deadline runs from each call's start, so options are made per call only when one is set. */
        private CallOptions options()
        {
            return deadline == null ? CallOptions.DEFAULT : CallOptions.DEFAULT.withDeadlineAfter(deadline);
        }

        @Override
        public void echo(final BytesValue request)
        {
            ClientCalls.unary(channel, echo, options(), request)
                .subscribe(onMessage, onError, onComplete);
        }

        @Override
        public void stream(final BytesValue request)
        {
            ClientCalls.serverStreaming(channel, stream, options(), request)
                .subscribe(onMessage, onError, onComplete);
        }

        private void onMessage(final BytesValue message)
        {
            observer.onMessage();
        }

        private void onError(final Throwable error)
        {
            observer.onClose(Status.fromThrowable(error).code().value(), error);
        }

        private void onComplete()
        {
            observer.onClose(0, null);
        }
    }
}
