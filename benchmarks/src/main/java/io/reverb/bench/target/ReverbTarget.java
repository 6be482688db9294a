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
 * URI already names one; for {@code shm://}, whose transport does not read it yet, it is also
 * installed in the JVM's engine configuration ({@link ShmPolling}).
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
        final EchoService.StreamReplies replies = new EchoService.StreamReplies();
        return ServiceDefinition.builder(EchoService.SERVICE_NAME)
            .addMethod(ECHO_METHOD, ServerCalls.unary(Mono::just))
            .addMethod(STREAM_METHOD, ServerCalls.serverStreaming(request ->
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
        final RpcServer.Builder builder = RpcServer.builder(withPolling(BenchTls.asTcp(uri), settings).toString());
        if (BenchTls.isTls(uri))
        {
            builder.transportOptions(BenchTls.serverOptions());
        }
        final RpcServer server = builder
            .addService(serviceDefinition())
            .maxInboundMessageSize(MAX_MESSAGE)
            .shutdownGracePeriod(Duration.ofSeconds(1))
            .build()
            .start();
        final String address = server.address();
        return new ReverbServer(server, address == null ? uri.toString() :
            BenchTls.isTls(uri) ? BenchTls.asTls(address) : address, BenchTls.asTcp(uri));
    }

    @Override
    public EchoClient connect(final URI uri, final TargetSettings settings)
    {
        final RpcChannel.Builder builder = RpcChannel.builder(withPolling(BenchTls.asTcp(uri), settings).toString());
        if (BenchTls.isTls(uri))
        {
            builder.transportOptions(BenchTls.clientOptions());
        }
        final RpcChannel channel = builder
            .maxInboundMessageSize(MAX_MESSAGE)
            .build();
        return new ReverbClient(channel, settings.deadline());
    }

    /**
     * @param uri      a Reverb address.
     * @param settings run settings.
     * @return the address with {@code polling=MODE} added when asked for and meaningful.
     */
    public static URI withPolling(final URI uri, final TargetSettings settings)
    {
        if (settings.polling() != null && "shm".equals(uri.getScheme()))
        {
            ShmPolling.apply(settings.polling());
        }
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
            return Transports.providerFor(listenUri).resourceUsage().describe();
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

        ReverbClient(final RpcChannel channel, final Duration deadline)
        {
            this.channel = channel;
            this.deadline = deadline;
        }

        @Override
        public BytesValue blockingEcho(final BytesValue request)
        {
            return ClientCalls.unary(channel, ECHO_METHOD, CallOptions.DEFAULT, request).block();
        }

        @Override
        public long blockingStream(final BytesValue request)
        {
            final Long count = ClientCalls.serverStreaming(channel, STREAM_METHOD, CallOptions.DEFAULT, request)
                .count().block();
            return count == null ? 0 : count;
        }

        @Override
        public Caller newCaller(final CallObserver observer)
        {
            return new ReverbCaller(channel, observer, deadline);
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

        ReverbCaller(final RpcChannel channel, final CallObserver observer, final Duration deadline)
        {
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
            ClientCalls.unary(channel, ECHO_METHOD, options(), request)
                .subscribe(onMessage, onError, onComplete);
        }

        @Override
        public void stream(final BytesValue request)
        {
            ClientCalls.serverStreaming(channel, STREAM_METHOD, options(), request)
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
