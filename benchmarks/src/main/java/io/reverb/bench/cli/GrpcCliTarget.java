package io.reverb.bench.cli;

import com.google.protobuf.DynamicMessage;
import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ChannelCredentials;
import io.grpc.ClientInterceptors;
import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import io.grpc.protobuf.ProtoUtils;
import io.grpc.stub.ClientCallStreamObserver;
import io.grpc.stub.ClientCalls;
import io.grpc.stub.ClientResponseObserver;
import io.grpc.stub.MetadataUtils;
import io.grpc.stub.StreamObserver;
import io.reverb.grpc.ReverbChannelBuilder;
import io.reverb.rdma.engine.EngineConfig;
import io.reverb.rdma.rpc.EngineOptions;
import io.reverb.rpc.retry.CallFailureCause;
import io.reverb.services.reflection.ServerReflectionRequest;
import io.reverb.services.reflection.ServerReflectionResponse;
import java.net.ConnectException;
import java.net.NoRouteToHostException;
import java.net.UnknownHostException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/**
 * reverb-cli's calls through grpc-java's channel: to a grpc-java (or any gRPC) server, {@code grpc://host:port},
 * HTTP/2 over grpc-java's Netty transport (plaintext, or TLS with reverb-cli's {@code --tls}), for comparison with
 * the same calls over Reverb; or over a Reverb transport ({@code grpc+shm://NAME}: reverb-grpc's
 * {@link ReverbChannelBuilder}).
 */
public final class GrpcCliTarget implements CliTarget
{
    private static final MethodDescriptor<ServerReflectionRequest, ServerReflectionResponse> REFLECTION =
        MethodDescriptor.<ServerReflectionRequest, ServerReflectionResponse>newBuilder()
            .setType(MethodDescriptor.MethodType.BIDI_STREAMING)
            .setFullMethodName("grpc.reflection.v1.ServerReflection/ServerReflectionInfo")
            .setRequestMarshaller(ProtoUtils.marshaller(ServerReflectionRequest.getDefaultInstance()))
            .setResponseMarshaller(ProtoUtils.marshaller(ServerReflectionResponse.getDefaultInstance()))
            .build();
    /** How many causes deep a connect failure is looked for. */
    private static final int MAX_CAUSE_DEPTH = 8;

    private final ManagedChannel channel;

    /**
     * @param host the server's host.
     * @param port the server's port.
     */
    public GrpcCliTarget(final String host, final int port)
    {
        this(host, port, InsecureChannelCredentials.create());
    }

    /**
     * @param host        the server's host.
     * @param port        the server's port.
     * @param credentials plaintext or TLS.
     */
    public GrpcCliTarget(final String host, final int port, final ChannelCredentials credentials)
    {
        this(Grpc.newChannelBuilderForAddress(host, port, credentials).build());
    }

    private GrpcCliTarget(final ManagedChannel channel)
    {
        this.channel = channel;
    }

    /**
     * @param reverbUri a Reverb address ({@code shm://NAME}, {@code tcp://HOST:PORT}, ...).
     * @return a target that calls through grpc-java's channel over that Reverb transport (reverb-grpc).
     * @throws IllegalArgumentException if the address is malformed.
     */
    public static GrpcCliTarget overReverb(final String reverbUri)
    {
        return overReverb(reverbUri, null);
    }

    /**
     * @param reverbUri a Reverb address ({@code shm://NAME}, {@code tcp://HOST:PORT}, ...).
     * @param engine    engine settings (a token, TLS), or null for the scheme's default engine.
     * @return a target that calls through grpc-java's channel over that Reverb transport (reverb-grpc).
     * @throws IllegalArgumentException if the address is malformed.
     */
    public static GrpcCliTarget overReverb(final String reverbUri, final EngineConfig engine)
    {
        final ReverbChannelBuilder builder = ReverbChannelBuilder.forTarget(reverbUri);
        if (engine != null)
        {
            builder.reverbChannel(channel -> channel.transportOptions(EngineOptions.of(engine)));
        }
        return new GrpcCliTarget(builder.build());
    }

    @Override
    public List<ServerReflectionResponse> reflect(final ServerReflectionRequest request, final Duration deadline)
        throws CallFailure
    {
        final CompletableFuture<List<ServerReflectionResponse>> done = new CompletableFuture<>();
        final List<ServerReflectionResponse> responses = new ArrayList<>();
        final StreamObserver<ServerReflectionRequest> requests = ClientCalls.asyncBidiStreamingCall(
            channel.newCall(REFLECTION, CallOptions.DEFAULT.withDeadlineAfter(deadline.toNanos(), TimeUnit.NANOSECONDS)),
            new ClientResponseObserver<ServerReflectionRequest, ServerReflectionResponse>()
            {
                private ClientCallStreamObserver<ServerReflectionRequest> call;

                @Override
                public void beforeStart(final ClientCallStreamObserver<ServerReflectionRequest> requestStream)
                {
                    call = requestStream;
                }

                @Override
                public void onNext(final ServerReflectionResponse value)
                {
                    synchronized (responses)
                    {
                        responses.add(value);
                        if (responses.size() == REFLECTION_RESPONSE_LIMIT)
                        {
                            // enough to tell a misbehaving server: stop its stream rather than collect it
                            done.complete(new ArrayList<>(responses));
                            call.cancel("reverb-cli: more reflection responses than requests", null);
                        }
                    }
                }

                @Override
                public void onError(final Throwable t)
                {
                    done.completeExceptionally(t);
                }

                @Override
                public void onCompleted()
                {
                    synchronized (responses)
                    {
                        done.complete(new ArrayList<>(responses));
                    }
                }
            });
        requests.onNext(request);
        requests.onCompleted();
        try
        {
            return done.get(); // the deadline ends the call, and with it the wait
        }
        catch (final ExecutionException ex)
        {
            throw failure(ex.getCause());
        }
        catch (final InterruptedException ex)
        {
            Thread.currentThread().interrupt();
            throw failure(ex);
        }
    }

    @Override
    public void call(final DynamicMethod method, final DynamicMessage request, final List<String[]> headers,
        final Duration deadline, final Consumer<DynamicMessage> responses) throws CallFailure
    {
        CallOptions options = CallOptions.DEFAULT;
        if (deadline != null)
        {
            options = options.withDeadlineAfter(deadline.toNanos(), TimeUnit.NANOSECONDS);
        }
        final Channel intercepted = ClientInterceptors.intercept(channel,
            MetadataUtils.newAttachHeadersInterceptor(metadata(headers)));
        try
        {
            switch (method.type())
            {
                case UNARY:
                    responses.accept(ClientCalls.blockingUnaryCall(intercepted, method.grpcMethod(), options, request));
                    break;
                case SERVER_STREAMING:
                    final Iterator<DynamicMessage> it =
                        ClientCalls.blockingServerStreamingCall(intercepted, method.grpcMethod(), options, request);
                    while (it.hasNext())
                    {
                        responses.accept(it.next());
                    }
                    break;
                default:
                    throw new IllegalArgumentException(method.fullMethodName() + " is " + method.type() +
                        ": reverb-cli calls unary and server-streaming methods only");
            }
        }
        catch (final IllegalArgumentException | CliException ex)
        {
            throw ex;
        }
        catch (final RuntimeException ex)
        {
            throw failure(ex);
        }
    }

    private static Metadata metadata(final List<String[]> headers)
    {
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

    private static CallFailure failure(final Throwable ex)
    {
        final Status status = Status.fromThrowable(ex);
        return new CallFailure(status.getCode().name(), status.getDescription(), ex,
            status.getCode() == Status.Code.UNAVAILABLE && connectFailure(status.getCause()));
    }

    /**
     * @param cause an UNAVAILABLE status's cause, or null.
     * @return whether it says no connection could be made: Netty's connect error (a {@link ConnectException}), an
     *         unknown or unreachable host, or Reverb's {@link CallFailureCause.Reason#CONNECT_FAILED} (reverb-grpc
     *         keeps the Reverb status's cause); a server that answered UNAVAILABLE carries none of these.
     */
    private static boolean connectFailure(final Throwable cause)
    {
        Throwable t = cause;
        for (int depth = 0; t != null && depth < MAX_CAUSE_DEPTH; depth++)
        {
            if (t instanceof ConnectException || t instanceof NoRouteToHostException ||
                t instanceof UnknownHostException ||
                t instanceof CallFailureCause && ((CallFailureCause)t).reason() == CallFailureCause.Reason.CONNECT_FAILED)
            {
                return true;
            }
            t = t.getCause();
        }
        return false;
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
