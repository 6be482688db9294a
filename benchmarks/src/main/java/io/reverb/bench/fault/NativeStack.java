package io.reverb.bench.fault;

import com.google.protobuf.BytesValue;
import io.reverb.rpc.CallOptions;
import io.reverb.rpc.MethodDescriptor;
import io.reverb.rpc.RpcChannel;
import io.reverb.rpc.RpcServer;
import io.reverb.rpc.ServiceDefinition;
import io.reverb.rpc.Status;
import io.reverb.rpc.protobuf.ProtoMarshaller;
import io.reverb.rpc.stub.ClientCalls;
import io.reverb.rpc.stub.ServerCalls;
import reactor.core.publisher.Mono;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * {@link FaultStack#NATIVE}: Reverb's own {@link RpcServer} and {@link RpcChannel}.
 */
final class NativeStack
{
    /** The method as Reverb declares it. */
    static final MethodDescriptor<BytesValue, BytesValue> METHOD =
        MethodDescriptor.<BytesValue, BytesValue>newBuilder()
            .type(MethodDescriptor.MethodType.UNARY)
            .fullMethodName(FaultStack.SLOW_FULL_NAME)
            .requestMarshaller(ProtoMarshaller.of(BytesValue.getDefaultInstance()))
            .responseMarshaller(ProtoMarshaller.of(BytesValue.getDefaultInstance()))
            .build();

    private NativeStack()
    {
    }

    /**
     * @param uri      where to listen.
     * @param settings keep-alive settings.
     * @return a client.
     */
    static FaultStack.Client connect(final String uri, final FaultStacks.ClientSettings settings)
    {
        return new NativeClient(RpcChannel.builder(uri).keepAlive(settings.keepAlive(), settings.keepAliveTimeout()).build(),
            uri);
    }

    /**
     * @param uri    where to listen.
     * @param delay  how long the handler takes to answer.
     * @param ledger counts the handler's calls.
     * @param timer  runs the delayed answers.
     * @return the started server.
     */
    static FaultStack.Server startServer(final String uri, final Duration delay, final HandlerLedger ledger,
        final ScheduledExecutorService timer)
    {
        final ServiceDefinition service = ServiceDefinition.builder(FaultStack.SERVICE)
            .addMethod(METHOD, ServerCalls.unary(request -> Mono.deferContextual(context ->
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

    private record NativeClient(RpcChannel channel, String uri) implements FaultStack.Client
    {
        @Override
        public CompletableFuture<FaultStack.Outcome> call(final long id, final Duration deadline)
        {
            final CompletableFuture<FaultStack.Outcome> outcome = new CompletableFuture<>();
            ClientCalls.unary(channel, METHOD, CallOptions.DEFAULT.withDeadlineAfter(deadline),
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

}
