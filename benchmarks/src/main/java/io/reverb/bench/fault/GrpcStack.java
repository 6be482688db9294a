package io.reverb.bench.fault;

import com.google.common.util.concurrent.FutureCallback;
import com.google.common.util.concurrent.Futures;
import com.google.common.util.concurrent.MoreExecutors;
import com.google.protobuf.BytesValue;
import io.grpc.CallOptions;
import io.grpc.ManagedChannel;
import io.grpc.MethodDescriptor;
import io.grpc.Server;
import io.grpc.ServerServiceDefinition;
import io.grpc.Status;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.protobuf.ProtoUtils;
import io.grpc.stub.ClientCalls;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.ServerCalls;
import io.reverb.grpc.ReverbChannelBuilder;
import io.reverb.grpc.ReverbServerBuilder;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.URI;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * {@link FaultStack#GRPC_REVERB} and {@link FaultStack#GRPC_NETTY}: grpc-java's server and channel, over a Reverb
 * transport (reverb-grpc) or over Netty.
 */
final class GrpcStack
{
    /** The method as grpc-java declares it. */
    static final MethodDescriptor<BytesValue, BytesValue> METHOD =
        MethodDescriptor.<BytesValue, BytesValue>newBuilder()
            .setType(MethodDescriptor.MethodType.UNARY)
            .setFullMethodName(FaultStack.SLOW_FULL_NAME)
            .setRequestMarshaller(ProtoUtils.marshaller(BytesValue.getDefaultInstance()))
            .setResponseMarshaller(ProtoUtils.marshaller(BytesValue.getDefaultInstance()))
            .build();

    private GrpcStack()
    {
    }

    /**
     * @param overReverb true for reverb-grpc's server on {@code uri}, false for Netty's on {@code uri}'s host and port.
     * @param uri        where to listen.
     * @param delay      how long the handler takes to answer.
     * @param ledger     counts the handler's calls.
     * @param timer      runs the delayed answers.
     * @return the started server.
     * @throws IOException if it cannot listen.
     */
    static FaultStack.Server startServer(final boolean overReverb, final String uri, final Duration delay,
        final HandlerLedger ledger, final ScheduledExecutorService timer) throws IOException
    {
        if (overReverb)
        {
            return new GrpcServer(ReverbServerBuilder.forAddress(uri).addService(service(delay, ledger, timer)).build().start(),
                uri);
        }
        final URI parsed = URI.create(uri);
        return new GrpcServer(NettyServerBuilder.forAddress(new InetSocketAddress(parsed.getHost(), parsed.getPort()))
            // the clients PING every 10 s: grpc-java's default policy (5 min) would answer GOAWAY
            .permitKeepAliveTime(1, TimeUnit.SECONDS)
            .addService(service(delay, ledger, timer)).build().start(), null);
    }

    /**
     * @param overReverb true for reverb-grpc's channel to {@code uri}, false for Netty's to its host and port.
     * @param uri        the server's address.
     * @param settings   keep-alive settings.
     * @return a client.
     */
    static FaultStack.Client connect(final boolean overReverb, final String uri, final FaultStacks.ClientSettings settings)
    {
        if (overReverb)
        {
            return new GrpcClient(ReverbChannelBuilder.forTarget(uri)
                .keepAliveTime(settings.keepAlive().toMillis(), TimeUnit.MILLISECONDS)
                .keepAliveTimeout(settings.keepAliveTimeout().toMillis(), TimeUnit.MILLISECONDS)
                .build(), uri);
        }
        final URI parsed = URI.create(uri);
        return new GrpcClient(NettyChannelBuilder.forAddress(parsed.getHost(), parsed.getPort()).usePlaintext()
            .keepAliveTime(settings.keepAlive().toMillis(), TimeUnit.MILLISECONDS)
            .keepAliveTimeout(settings.keepAliveTimeout().toMillis(), TimeUnit.MILLISECONDS)
            .build(), null);
    }

    private static ServerServiceDefinition service(final Duration delay, final HandlerLedger ledger,
        final ScheduledExecutorService timer)
    {
        return ServerServiceDefinition.builder(FaultStack.SERVICE)
            .addMethod(METHOD, ServerCalls.asyncUnaryCall((request, responses) ->
            {
                final long id = FaultStack.id(request);
                ledger.started(id, FaultStack.clientDeadline(request));
                final ServerCallStreamObserver<BytesValue> call = (ServerCallStreamObserver<BytesValue>)responses;
                call.setOnCancelHandler(() -> ledger.cancelled(id));
                timer.schedule(() ->
                {
                    if (call.isCancelled())
                    {
                        // counted apart only if the cancel handler has not run for it (issue 25 items 1-2)
                        ledger.foundCancelled(id);
                        return;
                    }
                    call.onNext(request);
                    call.onCompleted();
                    ledger.answered(id);
                }, delay.toNanos(), TimeUnit.NANOSECONDS);
            }))
            .build();
    }

    /** A grpc-java server, over Reverb ({@code uri} set) or Netty. */
    private record GrpcServer(Server server, String uri) implements FaultStack.Server
    {
        @Override
        public void shutdown(final Duration grace)
        {
            server.shutdown();
        }

        @Override
        public boolean awaitTermination(final Duration timeout) throws InterruptedException
        {
            return server.awaitTermination(timeout.toNanos(), TimeUnit.NANOSECONDS);
        }

        @Override
        public void shutdownNow()
        {
            server.shutdownNow();
        }

        @Override
        public long buffersInUse()
        {
            return FaultStacks.buffersInUse(uri);
        }
    }

    private record GrpcClient(ManagedChannel channel, String uri) implements FaultStack.Client
    {
        @Override
        public CompletableFuture<FaultStack.Outcome> call(final long id, final Duration deadline)
        {
            final CompletableFuture<FaultStack.Outcome> outcome = new CompletableFuture<>();
            Futures.addCallback(ClientCalls.futureUnaryCall(channel.newCall(METHOD,
                CallOptions.DEFAULT.withDeadlineAfter(deadline.toNanos(), TimeUnit.NANOSECONDS)),
                FaultStack.request(id, System.currentTimeMillis() + deadline.toMillis())), new FutureCallback<BytesValue>()
                {
                    @Override
                    public void onSuccess(final BytesValue result)
                    {
                        outcome.complete(FaultStack.Outcome.OK);
                    }

                    @Override
                    public void onFailure(final Throwable error)
                    {
                        final Status status = Status.fromThrowable(error);
                        outcome.complete(new FaultStack.Outcome(status.getCode().value(), status.getDescription()));
                    }
                }, MoreExecutors.directExecutor());
            return outcome;
        }

        @Override
        public long buffersInUse()
        {
            return FaultStacks.buffersInUse(uri);
        }

        @Override
        public void close()
        {
            channel.shutdownNow();
            try
            {
                channel.awaitTermination(10, TimeUnit.SECONDS);
            }
            catch (final InterruptedException ex)
            {
                Thread.currentThread().interrupt();
            }
        }
    }
}
