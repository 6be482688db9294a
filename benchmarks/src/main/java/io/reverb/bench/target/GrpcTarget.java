package io.reverb.bench.target;

import io.reverb.grpc.ReverbChannelBuilder;
import io.reverb.grpc.ReverbServerBuilder;

import com.google.protobuf.BytesValue;
import io.grpc.CallOptions;
import io.grpc.ManagedChannel;
import io.grpc.MethodDescriptor;
import io.grpc.Server;
import io.grpc.ServerServiceDefinition;
import io.grpc.Status;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.inprocess.InProcessServerBuilder;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.protobuf.ProtoUtils;
import io.grpc.stub.ClientCalls;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.ServerCalls;
import io.grpc.stub.StreamObserver;
import io.reverb.bench.EchoService;

import java.net.InetSocketAddress;
import java.net.URI;
import java.util.Arrays;
import java.util.Iterator;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

/**
 * grpc-java, the baseline: {@code grpc://host:port} runs over Netty (TCP, plaintext HTTP/2),
 * {@code grpc-inproc://name} over grpc-java's in-process transport, and {@code grpc+shm://name},
 * {@code grpc+tcp://host:port} (any Reverb scheme after {@code grpc+}) is grpc-java's channel and server over a
 * Reverb transport ({@code reverb-grpc}).
 *
 * <p>Both use grpc-java's defaults (a cached thread pool runs callbacks), as a user gets them.
 * The query parameter {@code ?direct=true} switches client and server to {@code directExecutor()},
 * the configuration grpc-java's own benchmarks use for their best latency; {@code ?retry=false} calls
 * {@code disableRetry()} on the channel (grpc-java's retry layer, on by default, then no longer wraps every call).
 */
public final class GrpcTarget implements Target
{
    /** Scheme of grpc-java over Netty. */
    public static final String NETTY_SCHEME = "grpc";
    /** Scheme of grpc-java's in-process transport. */
    public static final String INPROC_SCHEME = "grpc-inproc";
    /** Prefix of grpc-java over a Reverb transport: {@code grpc+shm://name}, {@code grpc+tcp://host:port}. */
    public static final String REVERB_PREFIX = "grpc+";

    /** {@code Echo} as a grpc-java method descriptor, marshalled with protobuf. */
    public static final MethodDescriptor<BytesValue, BytesValue> ECHO_METHOD =
        MethodDescriptor.<BytesValue, BytesValue>newBuilder()
            .setType(MethodDescriptor.MethodType.UNARY)
            .setFullMethodName(EchoService.ECHO_FULL_NAME)
            .setRequestMarshaller(ProtoUtils.marshaller(BytesValue.getDefaultInstance()))
            .setResponseMarshaller(ProtoUtils.marshaller(BytesValue.getDefaultInstance()))
            .build();

    /** {@code Stream} as a grpc-java method descriptor, marshalled with protobuf. */
    public static final MethodDescriptor<BytesValue, BytesValue> STREAM_METHOD =
        MethodDescriptor.<BytesValue, BytesValue>newBuilder()
            .setType(MethodDescriptor.MethodType.SERVER_STREAMING)
            .setFullMethodName(EchoService.STREAM_FULL_NAME)
            .setRequestMarshaller(ProtoUtils.marshaller(BytesValue.getDefaultInstance()))
            .setResponseMarshaller(ProtoUtils.marshaller(BytesValue.getDefaultInstance()))
            .build();

    private static final int MAX_MESSAGE = 64 * 1024 * 1024;

    @Override
    public String framework()
    {
        return "grpc-java";
    }

    @Override
    public boolean handles(final URI uri)
    {
        return NETTY_SCHEME.equals(uri.getScheme()) || INPROC_SCHEME.equals(uri.getScheme()) || isOverReverb(uri);
    }

    /**
     * @param uri a target address.
     * @return true for grpc-java over a Reverb transport ({@code grpc+shm://...}).
     */
    public static boolean isOverReverb(final URI uri)
    {
        return uri.getScheme() != null && uri.getScheme().startsWith(REVERB_PREFIX);
    }

    /**
     * @param uri      {@code grpc+shm://name?direct=true}.
     * @param settings the run's settings: a polling mode asked for is the Reverb transport's, as for native targets.
     * @return the Reverb address underneath, {@code shm://name} (the grpc-only query parameters dropped), with
     *     {@code polling=MODE} added when asked for ({@link ReverbTarget#withPolling}).
     */
    private static String reverbAddress(final URI uri, final TargetSettings settings)
    {
        return ReverbTarget.withPolling(URI.create(reverbAddress(uri)), settings).toString();
    }

    private static String reverbAddress(final URI uri)
    {
        final String s = uri.toString().substring(REVERB_PREFIX.length());
        final int q = s.indexOf('?');
        if (q < 0)
        {
            return s;
        }
        final String kept = Arrays.stream(s.substring(q + 1).split("&"))
            .filter(p -> !p.startsWith("direct=") && !p.startsWith("retry=")).collect(Collectors.joining("&"));
        return kept.isEmpty() ? s.substring(0, q) : s.substring(0, q + 1) + kept;
    }

    /**
     * @return the echo service as a grpc-java service definition.
     */
    public static ServerServiceDefinition serviceDefinition()
    {
        final EchoService.StreamReplies replies = new EchoService.StreamReplies();
        return ServerServiceDefinition.builder(EchoService.SERVICE_NAME)
            .addMethod(ECHO_METHOD, ServerCalls.asyncUnaryCall((request, responses) ->
            {
                responses.onNext(request);
                responses.onCompleted();
            }))
            .addMethod(STREAM_METHOD, ServerCalls.asyncServerStreamingCall((request, responses) ->
            {
                final EchoService.StreamRequest ask = EchoService.StreamRequest.decode(request);
                new FlowControlledReplies((ServerCallStreamObserver<BytesValue>)responses,
                    replies.ofSize(ask.size()), ask.count()).start();
            }))
            .build();
    }

    @Override
    public BenchServer startServer(final URI uri, final TargetSettings settings) throws Exception
    {
        final boolean direct = isDirect(uri);
        if (isOverReverb(uri))
        {
            final ReverbServerBuilder builder = ReverbServerBuilder.forAddress(reverbAddress(uri, settings))
                .addService(serviceDefinition()).maxInboundMessageSize(MAX_MESSAGE);
            if (direct)
            {
                builder.directExecutor();
            }
            final Server server = builder.build().start();
            final String query = uri.getRawQuery() == null ? "" : "?" + uri.getRawQuery();
            return new GrpcServer(server, REVERB_PREFIX + server.getListenSockets().get(0) + query);
        }
        if (INPROC_SCHEME.equals(uri.getScheme()))
        {
            final String name = uri.getHost() != null ? uri.getHost() : uri.getSchemeSpecificPart().replace("/", "");
            final InProcessServerBuilder builder = InProcessServerBuilder.forName(name)
                .addService(serviceDefinition()).maxInboundMessageSize(MAX_MESSAGE);
            if (direct)
            {
                builder.directExecutor();
            }
            final Server server = builder.build().start();
            return new GrpcServer(server, uri.toString());
        }

        final String host = uri.getHost() == null ? "127.0.0.1" : uri.getHost();
        final int port = Math.max(uri.getPort(), 0);
        final NettyServerBuilder builder = NettyServerBuilder.forAddress(new InetSocketAddress(host, port))
            .addService(serviceDefinition()).maxInboundMessageSize(MAX_MESSAGE);
        if (direct)
        {
            builder.directExecutor();
        }
        final Server server = builder.build().start();
        final String query = uri.getRawQuery() == null ? "" : "?" + uri.getRawQuery();
        return new GrpcServer(server, NETTY_SCHEME + "://" + host + ":" + server.getPort() + query);
    }

    @Override
    public EchoClient connect(final URI uri, final TargetSettings settings)
    {
        final boolean direct = isDirect(uri);
        final ManagedChannel channel;
        if (isOverReverb(uri))
        {
            final ReverbChannelBuilder builder = ReverbChannelBuilder.forTarget(reverbAddress(uri, settings))
                .maxInboundMessageSize(MAX_MESSAGE);
            if (direct)
            {
                builder.directExecutor();
            }
            if (noRetry(uri))
            {
                builder.disableRetry();
            }
            channel = builder.build();
        }
        else if (INPROC_SCHEME.equals(uri.getScheme()))
        {
            final String name = uri.getHost() != null ? uri.getHost() : uri.getSchemeSpecificPart().replace("/", "");
            final InProcessChannelBuilder builder = InProcessChannelBuilder.forName(name).maxInboundMessageSize(MAX_MESSAGE);
            if (direct)
            {
                builder.directExecutor();
            }
            if (noRetry(uri))
            {
                builder.disableRetry();
            }
            channel = builder.build();
        }
        else
        {
            final NettyChannelBuilder builder = NettyChannelBuilder.forAddress(uri.getHost(), uri.getPort())
                .usePlaintext().maxInboundMessageSize(MAX_MESSAGE);
            if (direct)
            {
                builder.directExecutor();
            }
            if (noRetry(uri))
            {
                builder.disableRetry();
            }
            channel = builder.build();
        }
        return new GrpcClient(channel);
    }

    private static boolean isDirect(final URI uri)
    {
        final String query = uri.getQuery();
        return query != null && query.contains("direct=true");
    }

    private static boolean noRetry(final URI uri)
    {
        final String query = uri.getQuery();
        return query != null && query.contains("retry=false");
    }

    private record GrpcServer(Server server, String uri) implements BenchServer
    {
        @Override
        public void close()
        {
            server.shutdown();
            try
            {
                if (!server.awaitTermination(5, TimeUnit.SECONDS))
                {
                    server.shutdownNow();
                }
            }
            catch (final InterruptedException ex)
            {
                Thread.currentThread().interrupt();
                server.shutdownNow();
            }
        }
    }

    private static final class GrpcClient implements EchoClient
    {
        private final ManagedChannel channel;

        GrpcClient(final ManagedChannel channel)
        {
            this.channel = channel;
        }

        @Override
        public BytesValue blockingEcho(final BytesValue request)
        {
            return ClientCalls.blockingUnaryCall(channel, ECHO_METHOD, CallOptions.DEFAULT, request);
        }

        @Override
        public long blockingStream(final BytesValue request)
        {
            long count = 0;
            final Iterator<BytesValue> messages =
                ClientCalls.blockingServerStreamingCall(channel, STREAM_METHOD, CallOptions.DEFAULT, request);
            while (messages.hasNext())
            {
                messages.next();
                count++;
            }
            return count;
        }

        @Override
        public Caller newCaller(final CallObserver observer)
        {
            final StreamObserver<BytesValue> responses = new StreamObserver<>()
            {
                @Override
                public void onNext(final BytesValue value)
                {
                    observer.onMessage();
                }

                @Override
                public void onError(final Throwable error)
                {
                    observer.onClose(Status.fromThrowable(error).getCode().value(), error);
                }

                @Override
                public void onCompleted()
                {
                    observer.onClose(0, null);
                }
            };
            return new Caller()
            {
                @Override
                public void echo(final BytesValue request)
                {
                    ClientCalls.asyncUnaryCall(channel.newCall(ECHO_METHOD, CallOptions.DEFAULT), request, responses);
                }

                @Override
                public void stream(final BytesValue request)
                {
                    ClientCalls.asyncServerStreamingCall(
                        channel.newCall(STREAM_METHOD, CallOptions.DEFAULT), request, responses);
                }
            };
        }

        @Override
        public void close()
        {
            channel.shutdownNow();
            try
            {
                channel.awaitTermination(5, TimeUnit.SECONDS);
            }
            catch (final InterruptedException ex)
            {
                Thread.currentThread().interrupt();
            }
        }
    }

    /**
     * Sends {@code count} copies of a message as fast as grpc-java's flow control lets it, so a
     * slow client holds the server back instead of filling its memory (as Reverb's REQUEST_N does).
     */
    private static final class FlowControlledReplies implements Runnable
    {
        private final ServerCallStreamObserver<BytesValue> responses;
        private final BytesValue message;
        private final int count;
        private int sent;
        private boolean completed;

        FlowControlledReplies(final ServerCallStreamObserver<BytesValue> responses, final BytesValue message, final int count)
        {
            this.responses = responses;
            this.message = message;
            this.count = count;
        }

        void start()
        {
            responses.setOnReadyHandler(this);
            responses.setOnCancelHandler(() -> completed = true);
            run();
        }

        @Override
        public void run()
        {
            while (!completed && sent < count && responses.isReady())
            {
                responses.onNext(message);
                sent++;
            }
            if (!completed && sent == count)
            {
                completed = true;
                responses.onCompleted();
            }
        }
    }
}
