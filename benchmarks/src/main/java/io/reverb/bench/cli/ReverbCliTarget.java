package io.reverb.bench.cli;

import com.google.protobuf.DynamicMessage;
import io.reverb.rdma.engine.EngineConfig;
import io.reverb.rdma.rpc.EngineOptions;
import io.reverb.rpc.CallOptions;
import io.reverb.rpc.Metadata;
import io.reverb.rpc.RpcChannel;
import io.reverb.rpc.Status;
import io.reverb.rpc.StatusCode;
import io.reverb.rpc.retry.CallFailureCause;
import io.reverb.rpc.stub.ClientCalls;
import io.reverb.services.reflection.ServerReflectionRequest;
import io.reverb.services.reflection.ServerReflectionResponse;
import io.reverb.services.reflection.ServerReflectionRpc;
import java.time.Duration;
import java.util.Base64;
import java.util.Iterator;
import java.util.List;
import java.util.function.Consumer;
import java.util.stream.Stream;
import reactor.core.publisher.Flux;

/**
 * reverb-cli's calls over a Reverb URI ({@code shm://}, {@code tcp://}, {@code rdma://}): one {@link RpcChannel},
 * dynamic methods ({@link DynamicMethod#reverbMethod()}) through {@link ClientCalls}.
 */
public final class ReverbCliTarget implements CliTarget
{
    private final RpcChannel channel;

    /**
     * @param uri the server's URI.
     */
    public ReverbCliTarget(final String uri)
    {
        this(uri, null);
    }

    /**
     * @param uri    the server's URI.
     * @param engine engine settings (a token, TLS), or null for the scheme's default engine.
     */
    public ReverbCliTarget(final String uri, final EngineConfig engine)
    {
        final RpcChannel.Builder builder = RpcChannel.builder(uri);
        if (engine != null)
        {
            builder.transportOptions(EngineOptions.of(engine));
        }
        this.channel = builder.build();
    }

    @Override
    public List<ServerReflectionResponse> reflect(final ServerReflectionRequest request, final Duration deadline)
        throws CallFailure
    {
        try
        {
            return ServerReflectionRpc.newReactorStub(channel)
                .withDeadlineAfter(deadline)
                .serverReflectionInfo(Flux.just(request))
                .take(REFLECTION_RESPONSE_LIMIT) // cancels the stream there: a flood never piles up
                .collectList()
                .block();
        }
        catch (final RuntimeException ex)
        {
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
            options = options.withDeadlineAfter(deadline);
        }
        if (!headers.isEmpty())
        {
            options = options.withMetadata(metadata(headers));
        }
        try
        {
            switch (method.type())
            {
                case UNARY:
                    final DynamicMessage response = ClientCalls.unary(channel, method.reverbMethod(), options, request)
                        .block();
                    if (response != null)
                    {
                        responses.accept(response);
                    }
                    break;
                case SERVER_STREAMING:
                    // on this thread, not the transport's: the consumer prints (and may block on a full pipe)
                    try (Stream<DynamicMessage> stream = ClientCalls.serverStreaming(channel, method.reverbMethod(),
                        options, request).toStream())
                    {
                        final Iterator<DynamicMessage> it = stream.iterator();
                        while (it.hasNext())
                        {
                            responses.accept(it.next());
                        }
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
        // the channel marks a call that never found a connection (structurally, not by its description)
        final CallFailureCause cause = CallFailureCause.find(status);
        final boolean notConnected = status.code() == StatusCode.UNAVAILABLE && cause != null &&
            cause.reason() == CallFailureCause.Reason.CONNECT_FAILED;
        return new CallFailure(status.code().name(), status.description(), ex, notConnected);
    }

    @Override
    public void close()
    {
        channel.close();
    }
}
