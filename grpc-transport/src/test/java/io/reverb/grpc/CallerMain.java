package io.reverb.grpc;

import com.google.protobuf.ByteString;
import io.grpc.ManagedChannel;
import io.grpc.stub.StreamObserver;
import io.reverb.grpc.test.EchoGrpc;
import io.reverb.grpc.test.EchoReply;
import io.reverb.grpc.test.EchoRequest;
import io.reverb.grpc.test.EchoRpc;
import io.reverb.rpc.RpcChannel;
import reactor.core.publisher.Flux;

import java.time.Duration;
import java.util.concurrent.TimeUnit;

/**
 * The other JVM of {@link CallerGoneTest}: a client that starts one call of each shape to an
 * {@link EndRecordingServices} service (none of which ever answers), prints {@code CALLED}, and then waits, to be
 * frozen (SIGSTOP) or killed (SIGKILL) by the test. The calls carry the deadline given, if any.
 */
public final class CallerMain
{
    private CallerMain()
    {
    }

    /**
     * @param args the server's address; {@code grpc} or {@code native} stubs; the calls' deadline in milliseconds
     *             (0: none).
     * @throws Exception on failure (exit code 1).
     */
    public static void main(final String[] args) throws Exception
    {
        final String target = args[0];
        final long deadlineMillis = Long.parseLong(args[2]);
        final EchoRequest request = EchoRequest.newBuilder().setPayload(ByteString.copyFromUtf8("x")).build();
        final EchoRequest warmUp = EchoRequest.newBuilder()
            .setPayload(ByteString.copyFromUtf8(EndRecordingServices.WARM_UP)).build();
        if ("grpc".equals(args[1]))
        {
            final ManagedChannel channel = ReverbChannelBuilder.forTarget(target).build();
            EchoGrpc.newBlockingStub(channel).unary(warmUp);
            EchoGrpc.EchoStub stub = EchoGrpc.newStub(channel);
            if (deadlineMillis > 0)
            {
                stub = stub.withDeadlineAfter(deadlineMillis, TimeUnit.MILLISECONDS);
            }
            stub.unary(request, ignoring());
            stub.serverStream(request, ignoring());
            stub.clientStream(ignoring()).onNext(request);
            stub.bidi(ignoring()).onNext(request);
        }
        else
        {
            final RpcChannel channel = RpcChannel.builder(target).build();
            EchoRpc.newReactorStub(channel).unary(warmUp).block(Duration.ofSeconds(30));
            EchoRpc.EchoReactorStub stub = EchoRpc.newReactorStub(channel);
            if (deadlineMillis > 0)
            {
                stub = stub.withDeadlineAfter(Duration.ofMillis(deadlineMillis));
            }
            final Flux<EchoRequest> endless = Flux.just(request).concatWith(Flux.never());
            stub.unary(request).subscribe(r -> { }, e -> { });
            stub.serverStream(request).subscribe(r -> { }, e -> { });
            stub.clientStream(endless).subscribe(r -> { }, e -> { });
            stub.bidi(endless).subscribe(r -> { }, e -> { });
        }
        System.out.println("CALLED");
        System.out.flush();
        while (System.in.read() >= 0)
        {
            // wait to be frozen or killed (or for the parent to close our input)
        }
        System.exit(0);
    }

    private static StreamObserver<EchoReply> ignoring()
    {
        return new StreamObserver<>()
        {
            @Override
            public void onNext(final EchoReply value)
            {
            }

            @Override
            public void onError(final Throwable t)
            {
            }

            @Override
            public void onCompleted()
            {
            }
        };
    }
}
