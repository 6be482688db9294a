package io.reverb.bench.target;

import com.google.protobuf.BytesValue;
import com.google.protobuf.DynamicMessage;
import io.grpc.ClientInterceptors;
import io.grpc.ManagedChannel;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.stub.MetadataUtils;
import io.grpc.stub.StreamObserver;
import io.reverb.bench.cli.DynamicMethod;
import io.reverb.grpc.ReverbChannelBuilder;
import io.reverb.rpc.CallOptions;
import io.reverb.rpc.Metadata;
import io.reverb.rpc.MethodDescriptor.MethodType;
import io.reverb.rpc.RpcChannel;
import io.reverb.rpc.Status;
import io.reverb.rpc.stub.ClientCalls;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;

// CHECKSTYLE.OFF: InlineFullyQualifiedName (grpc-java's Metadata, Status, CallOptions... beside Reverb's)
/**
 * A client of any service, for reverb-bench's {@code --call}: every call sends one fixed request (a
 * {@link DynamicMessage} built from JSON) to one method known from its descriptors ({@link DynamicMethod}), with fixed
 * metadata and a deadline per call, over {@code connections} channels (the callers, one per load lane, take them in
 * turn). Reverb URIs go through Reverb's channel; {@code grpc://HOST:PORT} through grpc-java over Netty (plaintext),
 * {@code grpc+shm://NAME} (any Reverb scheme after {@code grpc+}) through grpc-java over Reverb (reverb-grpc);
 * {@code ?direct=true} on a grpc URI runs grpc-java's callbacks on its transport threads ({@code directExecutor()}).
 *
 * <p>It is an {@link EchoClient} so that the {@link io.reverb.bench.load.LoadGenerator} drives it as it drives the
 * echo service: {@link Caller#echo} makes a unary call, {@link Caller#stream} a server-streaming one, and the
 * {@code BytesValue} they are given (the echo payload) is ignored. The first failure of a run is kept
 * ({@link #firstFailure()}), to say why calls failed.
 */
public final class DynamicClient implements EchoClient
{
    private static final int MAX_MESSAGE = 64 * 1024 * 1024;
    private static final String GRPC_OVER_REVERB = "grpc+";

    private final DynamicMethod method;
    private final DynamicMessage request;
    private final Duration deadline;
    private final List<RpcChannel> reverbChannels = new ArrayList<>();
    private final List<ManagedChannel> grpcChannels = new ArrayList<>();
    private final List<io.grpc.Channel> grpcCallChannels = new ArrayList<>();
    private final Metadata reverbMetadata;
    private final AtomicInteger nextChannel = new AtomicInteger();
    private final AtomicReference<Throwable> firstFailure = new AtomicReference<>();

    private DynamicClient(final DynamicMethod method, final DynamicMessage request, final Duration deadline,
        final List<String[]> headers)
    {
        this.method = Objects.requireNonNull(method, "method");
        this.request = Objects.requireNonNull(request, "request");
        this.deadline = deadline;
        this.reverbMetadata = reverbMetadata(headers);
    }

    /**
     * @param uri         the server: a Reverb URI, {@code grpc://HOST:PORT} or {@code grpc+SCHEME://...}.
     * @param method      the method (unary or server-streaming).
     * @param request     the request every call sends.
     * @param headers     metadata, name and value pairs ({@code -bin} names: base64 values).
     * @param deadline    each call's deadline, or null for none.
     * @param connections how many channels to open.
     * @param settings    the polling mode for Reverb URIs.
     * @return the connected client.
     * @throws IllegalArgumentException if the method streams requests, or the address is malformed.
     */
    public static DynamicClient connect(final URI uri, final DynamicMethod method, final DynamicMessage request,
        final List<String[]> headers, final Duration deadline, final int connections, final TargetSettings settings)
    {
        if (method.type() != MethodType.UNARY && method.type() != MethodType.SERVER_STREAMING)
        {
            throw new IllegalArgumentException(method.fullMethodName() + " is " + method.type() +
                ": reverb-bench calls unary and server-streaming methods only");
        }
        if (connections < 1)
        {
            throw new IllegalArgumentException("connections must be at least 1: " + connections);
        }
        final DynamicClient client = new DynamicClient(method, request, deadline, headers);
        final String scheme = uri.getScheme() == null ? "" : uri.getScheme();
        try
        {
            for (int i = 0; i < connections; i++)
            {
                if (GrpcTarget.NETTY_SCHEME.equals(scheme) || scheme.startsWith(GRPC_OVER_REVERB))
                {
                    final ManagedChannel channel = grpcChannel(uri);
                    client.grpcChannels.add(channel);
                    client.grpcCallChannels.add(ClientInterceptors.intercept(channel,
                        MetadataUtils.newAttachHeadersInterceptor(grpcMetadata(headers))));
                }
                else
                {
                    client.reverbChannels.add(RpcChannel.builder(ReverbTarget.withPolling(uri, settings).toString())
                        .maxInboundMessageSize(MAX_MESSAGE).build());
                }
            }
        }
        catch (final RuntimeException ex)
        {
            client.close();
            throw ex;
        }
        return client;
    }

    private static ManagedChannel grpcChannel(final URI uri)
    {
        final boolean direct = uri.getQuery() != null && uri.getQuery().contains("direct=true");
        if (GrpcTarget.NETTY_SCHEME.equals(uri.getScheme()))
        {
            if (uri.getHost() == null || uri.getPort() <= 0)
            {
                throw new IllegalArgumentException("grpc:// needs the server's host and port: " + uri);
            }
            final NettyChannelBuilder builder = NettyChannelBuilder.forAddress(uri.getHost(), uri.getPort())
                .usePlaintext().maxInboundMessageSize(MAX_MESSAGE);
            return (direct ? builder.directExecutor() : builder).build();
        }
        String reverb = uri.toString().substring(GRPC_OVER_REVERB.length());
        reverb = reverb.replaceAll("([?&])direct=[^&]*&?", "$1").replaceAll("[?&]$", "");
        final ReverbChannelBuilder builder = ReverbChannelBuilder.forTarget(reverb).maxInboundMessageSize(MAX_MESSAGE);
        return (direct ? builder.directExecutor() : builder).build();
    }

    private static Metadata reverbMetadata(final List<String[]> headers)
    {
        if (headers.isEmpty())
        {
            return null;
        }
        final Metadata metadata = new Metadata();
        for (final String[] header : headers)
        {
            if (header[0].endsWith(Metadata.BINARY_HEADER_SUFFIX))
            {
                metadata.put(Metadata.Key.of(header[0], Metadata.BINARY_BYTE_MARSHALLER),
                    Base64.getDecoder().decode(header[1]));
            }
            else
            {
                metadata.put(Metadata.Key.of(header[0], Metadata.ASCII_STRING_MARSHALLER), header[1]);
            }
        }
        return metadata;
    }

    private static io.grpc.Metadata grpcMetadata(final List<String[]> headers)
    {
        final io.grpc.Metadata metadata = new io.grpc.Metadata();
        for (final String[] header : headers)
        {
            if (header[0].endsWith(io.grpc.Metadata.BINARY_HEADER_SUFFIX))
            {
                metadata.put(io.grpc.Metadata.Key.of(header[0], io.grpc.Metadata.BINARY_BYTE_MARSHALLER),
                    Base64.getDecoder().decode(header[1]));
            }
            else
            {
                metadata.put(io.grpc.Metadata.Key.of(header[0], io.grpc.Metadata.ASCII_STRING_MARSHALLER),
                    header[1]);
            }
        }
        return metadata;
    }

    /**
     * @return the first call that failed since this client was made, or null.
     */
    public Throwable firstFailure()
    {
        return firstFailure.get();
    }

    /**
     * @return the framework the calls go through: {@code "reverb"} or {@code "grpc-java"}.
     */
    public String framework()
    {
        return grpcChannels.isEmpty() ? "reverb" : "grpc-java";
    }

    /**
     * A unary call of the method with the client's request, waiting for its response.
     *
     * @param ignored the echo payload: not sent.
     * @return an empty {@code BytesValue}: the response is a message of the method's own type.
     * @throws RuntimeException the framework's error if the call fails.
     */
    @Override
    public BytesValue blockingEcho(final BytesValue ignored)
    {
        if (grpcChannels.isEmpty())
        {
            ClientCalls.unary(reverbChannels.get(0), method.reverbMethod(), options(), request).block();
        }
        else
        {
            io.grpc.stub.ClientCalls.blockingUnaryCall(grpcCallChannels.get(0), method.grpcMethod(), grpcOptions(),
                request);
        }
        return BytesValue.getDefaultInstance();
    }

    /**
     * A server-streaming call of the method with the client's request, consuming every response.
     *
     * @param ignored the echo payload: not sent.
     * @return the number of responses.
     * @throws RuntimeException the framework's error if the call fails.
     */
    @Override
    public long blockingStream(final BytesValue ignored)
    {
        if (grpcChannels.isEmpty())
        {
            final Long count = ClientCalls.serverStreaming(reverbChannels.get(0), method.reverbMethod(), options(),
                request).count().block();
            return count == null ? 0 : count;
        }
        long count = 0;
        final var responses = io.grpc.stub.ClientCalls.blockingServerStreamingCall(grpcCallChannels.get(0),
            method.grpcMethod(), grpcOptions(), request);
        while (responses.hasNext())
        {
            responses.next();
            count++;
        }
        return count;
    }

    @Override
    public Caller newCaller(final CallObserver observer)
    {
        final int index = Math.floorMod(nextChannel.getAndIncrement(),
            grpcChannels.isEmpty() ? reverbChannels.size() : grpcChannels.size());
        return grpcChannels.isEmpty() ? new ReverbCaller(reverbChannels.get(index), observer)
            : new GrpcCaller(grpcCallChannels.get(index), observer);
    }

    /** The deadline runs from each call's start, so options are made per call when one is set. */
    private CallOptions options()
    {
        CallOptions options = reverbMetadata == null ? CallOptions.DEFAULT
            : CallOptions.DEFAULT.withMetadata(reverbMetadata);
        if (deadline != null)
        {
            options = options.withDeadlineAfter(deadline);
        }
        return options;
    }

    private io.grpc.CallOptions grpcOptions()
    {
        return deadline == null ? io.grpc.CallOptions.DEFAULT
            : io.grpc.CallOptions.DEFAULT.withDeadlineAfter(deadline.toNanos(), TimeUnit.NANOSECONDS);
    }

    private void failed(final Throwable error)
    {
        firstFailure.compareAndSet(null, error);
    }

    @Override
    public void close()
    {
        for (final RpcChannel channel : reverbChannels)
        {
            channel.close();
        }
        for (final ManagedChannel channel : grpcChannels)
        {
            channel.shutdownNow();
        }
        for (final ManagedChannel channel : grpcChannels)
        {
            try
            {
                channel.awaitTermination(5, TimeUnit.SECONDS);
            }
            catch (final InterruptedException ex)
            {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }

    /** One lane's calls over a Reverb channel; its callbacks are bound once, not per call. */
    private final class ReverbCaller implements Caller
    {
        private final RpcChannel channel;
        private final CallObserver observer;
        private final Consumer<DynamicMessage> onMessage;
        private final Consumer<Throwable> onError;
        private final Runnable onComplete;
        private final io.reverb.rpc.MethodDescriptor<DynamicMessage, DynamicMessage> descriptor;

        ReverbCaller(final RpcChannel channel, final CallObserver observer)
        {
            this.channel = channel;
            this.observer = observer;
            this.descriptor = method.reverbMethod();
            this.onMessage = message -> observer.onMessage();
            this.onError = this::onError;
            this.onComplete = () -> observer.onClose(0, null);
        }

        private void onError(final Throwable error)
        {
            failed(error);
            observer.onClose(Status.fromThrowable(error).code().value(), error);
        }

        @Override
        public void echo(final BytesValue ignored)
        {
            ClientCalls.unary(channel, descriptor, options(), request).subscribe(onMessage, onError, onComplete);
        }

        @Override
        public void stream(final BytesValue ignored)
        {
            ClientCalls.serverStreaming(channel, descriptor, options(), request)
                .subscribe(onMessage, onError, onComplete);
        }
    }

    /** One lane's calls over a grpc-java channel; one response observer for all of them. */
    private final class GrpcCaller implements Caller
    {
        private final io.grpc.Channel channel;
        private final io.grpc.MethodDescriptor<DynamicMessage, DynamicMessage> descriptor;
        private final StreamObserver<DynamicMessage> responses;

        GrpcCaller(final io.grpc.Channel channel, final CallObserver observer)
        {
            this.channel = channel;
            this.descriptor = method.grpcMethod();
            this.responses = new StreamObserver<>()
            {
                @Override
                public void onNext(final DynamicMessage value)
                {
                    observer.onMessage();
                }

                @Override
                public void onError(final Throwable error)
                {
                    failed(error);
                    observer.onClose(io.grpc.Status.fromThrowable(error).getCode().value(), error);
                }

                @Override
                public void onCompleted()
                {
                    observer.onClose(0, null);
                }
            };
        }

        @Override
        public void echo(final BytesValue ignored)
        {
            io.grpc.stub.ClientCalls.asyncUnaryCall(channel.newCall(descriptor, grpcOptions()), request, responses);
        }

        @Override
        public void stream(final BytesValue ignored)
        {
            io.grpc.stub.ClientCalls.asyncServerStreamingCall(channel.newCall(descriptor, grpcOptions()), request,
                responses);
        }
    }
}
// CHECKSTYLE.ON: InlineFullyQualifiedName
