package io.reverb.bench.fault;

import com.google.common.util.concurrent.FutureCallback;
import com.google.common.util.concurrent.Futures;
import com.google.common.util.concurrent.MoreExecutors;
import com.google.protobuf.BytesValue;
import io.grpc.ManagedChannel;
import io.grpc.ServerServiceDefinition;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.protobuf.ProtoUtils;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.ServerCalls;
import io.reverb.grpc.ReverbChannelBuilder;
import io.reverb.grpc.ReverbServerBuilder;
import io.reverb.rpc.CallOptions;
import io.reverb.rpc.MethodDescriptor;
import io.reverb.rpc.RpcChannel;
import io.reverb.rpc.RpcServer;
import io.reverb.rpc.ServiceDefinition;
import io.reverb.rpc.Status;
import io.reverb.rpc.protobuf.ProtoMarshaller;
import io.reverb.rpc.stub.ClientCalls;
import io.reverb.rpc.transport.Transports;
import reactor.core.publisher.Mono;

import java.net.InetSocketAddress;
import java.net.URI;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * Starts servers and connects clients of each {@link FaultStack}, the same service and settings for all three.
 */
public final class FaultStacks
{
    /** The method as Reverb declares it. */
    static final MethodDescriptor<BytesValue, BytesValue> NATIVE_METHOD =
        MethodDescriptor.<BytesValue, BytesValue>newBuilder()
            .type(MethodDescriptor.MethodType.UNARY)
            .fullMethodName(FaultStack.SLOW_FULL_NAME)
            .requestMarshaller(ProtoMarshaller.of(BytesValue.getDefaultInstance()))
            .responseMarshaller(ProtoMarshaller.of(BytesValue.getDefaultInstance()))
            .build();

    /** The method as grpc-java declares it. */
    static final io.grpc.MethodDescriptor<BytesValue, BytesValue> GRPC_METHOD =
        io.grpc.MethodDescriptor.<BytesValue, BytesValue>newBuilder()
            .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
            .setFullMethodName(FaultStack.SLOW_FULL_NAME)
            .setRequestMarshaller(ProtoUtils.marshaller(BytesValue.getDefaultInstance()))
            .setResponseMarshaller(ProtoUtils.marshaller(BytesValue.getDefaultInstance()))
            .build();

    private FaultStacks()
    {
    }

    /**
     * Client settings shared by every stack.
     *
     * @param keepAlive        keep-alive interval (grpc-java over Netty raises anything below 10 s to 10 s).
     * @param keepAliveTimeout how long a keep-alive PING may go unanswered.
     */
    public record ClientSettings(Duration keepAlive, Duration keepAliveTimeout)
    {
    }

    /**
     * @param stack    the stack.
     * @param uri      where to listen: {@code tcp://host:port} or {@code shm://name} (Netty: tcp only).
     * @param delay    how long the handler takes to answer.
     * @param ledger   counts the handler's calls.
     * @param timer    runs the delayed answers.
     * @return the started server.
     * @throws java.io.IOException if it cannot listen.
     */
    public static FaultStack.Server startServer(final FaultStack stack, final String uri, final Duration delay,
        final HandlerLedger ledger, final ScheduledExecutorService timer) throws java.io.IOException
    {
        return switch (stack)
        {
            case NATIVE -> startNative(uri, delay, ledger, timer);
            case GRPC_REVERB -> new GrpcServer(ReverbServerBuilder.forAddress(uri)
                .addService(grpcService(delay, ledger, timer)).build().start(), uri);
            case GRPC_NETTY ->
            {
                final URI parsed = URI.create(uri);
                requireTcp(parsed, stack);
                yield new GrpcServer(NettyServerBuilder.forAddress(new InetSocketAddress(parsed.getHost(), parsed.getPort()))
                    // the clients PING every 10 s: grpc-java's default policy (5 min) would answer GOAWAY
                    .permitKeepAliveTime(1, TimeUnit.SECONDS)
                    .addService(grpcService(delay, ledger, timer)).build().start(), null);
            }
        };
    }

    /**
     * @param stack    the stack.
     * @param uri      the server's address.
     * @param settings keep-alive settings.
     * @return a client (its channel connects on the first call).
     */
    public static FaultStack.Client connect(final FaultStack stack, final String uri, final ClientSettings settings)
    {
        return switch (stack)
        {
            case NATIVE -> new NativeClient(RpcChannel.builder(uri)
                .keepAlive(settings.keepAlive(), settings.keepAliveTimeout()).build(), uri);
            case GRPC_REVERB -> new GrpcClient(ReverbChannelBuilder.forTarget(uri)
                .keepAliveTime(settings.keepAlive().toMillis(), TimeUnit.MILLISECONDS)
                .keepAliveTimeout(settings.keepAliveTimeout().toMillis(), TimeUnit.MILLISECONDS)
                .build(), uri);
            case GRPC_NETTY ->
            {
                final URI parsed = URI.create(uri);
                requireTcp(parsed, stack);
                yield new GrpcClient(NettyChannelBuilder.forAddress(parsed.getHost(), parsed.getPort()).usePlaintext()
                    .keepAliveTime(settings.keepAlive().toMillis(), TimeUnit.MILLISECONDS)
                    .keepAliveTimeout(settings.keepAliveTimeout().toMillis(), TimeUnit.MILLISECONDS)
                    .build(), null);
            }
        };
    }

    private static void requireTcp(final URI uri, final FaultStack stack)
    {
        if (!"tcp".equals(uri.getScheme()) || uri.getHost() == null || uri.getPort() <= 0)
        {
            throw new IllegalArgumentException(stack.cliName() + " needs tcp://host:port, not " + uri);
        }
    }

    /** Buffers in use of the Reverb transport serving {@code uri}; -1 for none (Netty). */
    private static long buffersInUse(final String uri)
    {
        return uri == null ? -1 : Transports.providerFor(Transports.parse(uri)).resourceUsage().buffersInUse();
    }

    private static FaultStack.Server startNative(final String uri, final Duration delay, final HandlerLedger ledger,
        final ScheduledExecutorService timer)
    {
        final ServiceDefinition service = ServiceDefinition.builder(FaultStack.SERVICE)
            .addMethod(NATIVE_METHOD, io.reverb.rpc.stub.ServerCalls.unary(request -> Mono.deferContextual(context ->
            {
                final long id = FaultStack.id(request);
                ledger.started(id, FaultStack.clientDeadline(request));
                final CompletableFuture<BytesValue> answer = new CompletableFuture<>();
                timer.schedule(() -> answer.complete(request), delay.toNanos(), TimeUnit.NANOSECONDS);
                return Mono.fromFuture(answer)
                    .doOnSuccess(r -> ledger.answered(id))
                    .doOnCancel(() -> ledger.cancelled(id));
            })))
            .build();
        final RpcServer server = RpcServer.builder(uri).addService(service).build().start();
        return new FaultStack.Server()
        {
            @Override
            public void shutdown(final Duration grace)
            {
                server.shutdown(grace);
            }

            @Override
            public boolean awaitTermination(final Duration timeout) throws InterruptedException
            {
                return server.awaitTermination(timeout);
            }

            @Override
            public void shutdownNow()
            {
                server.shutdown(Duration.ZERO);
            }

            @Override
            public long buffersInUse()
            {
                return FaultStacks.buffersInUse(uri);
            }
        };
    }

    private static ServerServiceDefinition grpcService(final Duration delay, final HandlerLedger ledger,
        final ScheduledExecutorService timer)
    {
        return ServerServiceDefinition.builder(FaultStack.SERVICE)
            .addMethod(GRPC_METHOD, ServerCalls.asyncUnaryCall((request, responses) ->
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
    private record GrpcServer(io.grpc.Server server, String uri) implements FaultStack.Server
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

    private record NativeClient(RpcChannel channel, String uri) implements FaultStack.Client
    {
        @Override
        public CompletableFuture<FaultStack.Outcome> call(final long id, final Duration deadline)
        {
            final CompletableFuture<FaultStack.Outcome> outcome = new CompletableFuture<>();
            ClientCalls.unary(channel, NATIVE_METHOD, CallOptions.DEFAULT.withDeadlineAfter(deadline),
                    FaultStack.request(id, System.currentTimeMillis() + deadline.toMillis()))
                .subscribe(r -> outcome.complete(FaultStack.Outcome.OK), e ->
                {
                    final Status status = Status.fromThrowable(e);
                    outcome.complete(new FaultStack.Outcome(status.code().value(), status.description()));
                }, () -> outcome.complete(FaultStack.Outcome.OK));
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
            channel.close();
        }
    }

    private record GrpcClient(ManagedChannel channel, String uri) implements FaultStack.Client
    {
        @Override
        public CompletableFuture<FaultStack.Outcome> call(final long id, final Duration deadline)
        {
            final CompletableFuture<FaultStack.Outcome> outcome = new CompletableFuture<>();
            Futures.addCallback(io.grpc.stub.ClientCalls.futureUnaryCall(channel.newCall(GRPC_METHOD,
                io.grpc.CallOptions.DEFAULT.withDeadlineAfter(deadline.toNanos(), TimeUnit.NANOSECONDS)),
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
                        final io.grpc.Status status = io.grpc.Status.fromThrowable(error);
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
