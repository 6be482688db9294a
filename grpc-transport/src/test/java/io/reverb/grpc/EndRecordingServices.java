package io.reverb.grpc;

import io.grpc.Context;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import io.reverb.grpc.test.EchoGrpc;
import io.reverb.grpc.test.EchoReply;
import io.reverb.grpc.test.EchoRequest;
import io.reverb.grpc.test.EchoRpc;
import io.reverb.rpc.RpcContext;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

import java.util.ArrayList;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;

/**
 * Services for the tests of issue 25 ("the server handler learns of the end of the call"): every handler records
 * itself when it starts and never answers on its own, so that its call can only end from outside (client cancel,
 * client deadline, server deadline, lost connection); the record says how the handler learned of that end. A request
 * whose payload is {@link #WARM_UP} is answered at once and not recorded (to connect and warm a channel).
 *
 * <p>Two implementations of the same {@code Echo} service: {@link Grpc} with grpc-java's generated base class, and
 * {@link Native} with Reverb's.
 */
final class EndRecordingServices
{
    /** The payload of a unary request that is answered at once. */
    static final String WARM_UP = "warm-up";

    private EndRecordingServices()
    {
    }

    /** One handler invocation and how it learned of the end of its call. */
    static final class Handler
    {
        final String method;
        /** grpc-java: the cancel handler ran; native: the response publisher was cancelled or failed. */
        volatile boolean cancelled;
        /** grpc-java: the call was reported complete (onComplete); native: never (the publisher does not complete). */
        volatile boolean completed;
        /** The call's context (grpc-java {@code Context}, Reverb {@code RpcContext}) was cancelled by then. */
        volatile boolean contextCancelled;
        /** What the context said (cause or status), for the failure message. */
        volatile String reason;

        Handler(final String method)
        {
            this.method = method;
        }

        boolean ended()
        {
            return cancelled || completed;
        }

        /** @return whether it ended and its context was cancelled (what the waiting waits for). */
        boolean settled()
        {
            return ended() && contextCancelled;
        }

        @Override
        public String toString()
        {
            return method + (cancelled ? " cancelled" : "") + (completed ? " completed" : "") +
                (!ended() ? " still open" : "") + (contextCancelled ? ", context cancelled" : ", context not cancelled") +
                (reason != null ? " (" + reason + ")" : "");
        }
    }

    /** What both implementations record. */
    abstract static class Recorder
    {
        private final Queue<Handler> handlers = new ConcurrentLinkedQueue<>();

        Handler record(final String method)
        {
            final Handler handler = new Handler(method);
            handlers.add(handler);
            return handler;
        }

        /** @return how many handlers started so far. */
        int started()
        {
            return handlers.size();
        }

        /**
         * @param count handlers to wait for.
         * @return true once that many started (false after a 30 s safety net).
         * @throws InterruptedException if interrupted.
         */
        boolean awaitStarted(final int count) throws InterruptedException
        {
            final long safetyNet = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (handlers.size() < count)
            {
                if (System.nanoTime() - safetyNet > 0)
                {
                    return false;
                }
                Thread.sleep(5);
            }
            return true;
        }

        /**
         * @return the handlers started so far, once each has ended and its context was cancelled; handlers that start
         * meanwhile are waited for too. After a safety net of 30 s it returns what it has (the caller's assertions
         * say which did not end).
         * @throws InterruptedException if interrupted.
         */
        List<Handler> awaitEnded() throws InterruptedException
        {
            final long safetyNet = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            List<Handler> snapshot = new ArrayList<>(handlers);
            while (System.nanoTime() - safetyNet < 0)
            {
                if (snapshot.stream().allMatch(Handler::settled))
                {
                    final List<Handler> again = new ArrayList<>(handlers);
                    if (again.size() == snapshot.size())
                    {
                        break;
                    }
                    snapshot = again;
                }
                Thread.sleep(5);
            }
            return snapshot;
        }
    }

    /** The grpc-java implementation: the end is {@code setOnCancelHandler}'s handler (or, wrongly, onClose). */
    static final class Grpc extends EchoGrpc.EchoImplBase
    {
        final Recorder recorder = new Recorder()
        {
        };

        private Handler watch(final String method, final StreamObserver<EchoReply> responses)
        {
            final Handler handler = new Handler(method);
            final Context context = Context.current();
            final ServerCallStreamObserver<EchoReply> call = (ServerCallStreamObserver<EchoReply>)responses;
            call.setOnCancelHandler(() -> handler.cancelled = true);
            // grpc-java cancels the Context on its own thread, racing with onCancel (ServerImpl's cancelExecutor)
            context.addListener(c ->
            {
                handler.reason = String.valueOf(c.cancellationCause());
                handler.contextCancelled = true;
            }, Runnable::run);
            call.setOnCloseHandler(() -> handler.completed = true);
            recorder.handlers.add(handler);
            return handler;
        }

        @Override
        public void unary(final EchoRequest request, final StreamObserver<EchoReply> responses)
        {
            if (WARM_UP.equals(request.getPayload().toStringUtf8()))
            {
                responses.onNext(EchoReply.getDefaultInstance());
                responses.onCompleted();
                return;
            }
            watch("unary", responses);
        }

        @Override
        public void serverStream(final EchoRequest request, final StreamObserver<EchoReply> responses)
        {
            watch("serverStream", responses);
            responses.onNext(EchoReply.newBuilder().setIndex(0).build()); // one, then the stream stays open
        }

        @Override
        public StreamObserver<EchoRequest> clientStream(final StreamObserver<EchoReply> responses)
        {
            watch("clientStream", responses);
            return ignoring();
        }

        @Override
        public StreamObserver<EchoRequest> bidi(final StreamObserver<EchoReply> responses)
        {
            watch("bidi", responses);
            return ignoring();
        }

        private static StreamObserver<EchoRequest> ignoring()
        {
            return new StreamObserver<>()
            {
                @Override
                public void onNext(final EchoRequest value)
                {
                }

                @Override
                public void onError(final Throwable t)
                {
                    // with a cancel handler set, grpc-java calls it instead (see watch)
                }

                @Override
                public void onCompleted()
                {
                }
            };
        }
    }

    /** The native implementation: the end is the cancellation (or failure) of the handler's response publisher. */
    static final class Native extends EchoRpc.EchoImplBase
    {
        final Recorder recorder = new Recorder()
        {
        };

        private <T> Flux<T> watch(final String method, final Flux<T> responses)
        {
            return Flux.deferContextual(view ->
            {
                final Handler handler = recorder.record(method);
                final RpcContext context = RpcContext.from(view);
                return responses
                    .doOnCancel(() -> ended(handler, context))
                    .doOnError(e -> ended(handler, context))
                    .doOnComplete(() -> handler.completed = true);
            });
        }

        private static void ended(final Handler handler, final RpcContext context)
        {
            handler.contextCancelled = context != null && context.isCancelled();
            handler.reason = context != null ? String.valueOf(context.cancellationStatus()) : "no RpcContext";
            handler.cancelled = true;
        }

        @Override
        public Mono<EchoReply> unary(final EchoRequest request)
        {
            if (WARM_UP.equals(request.getPayload().toStringUtf8()))
            {
                return Mono.just(EchoReply.getDefaultInstance());
            }
            return watch("unary", Flux.<EchoReply>never()).next();
        }

        @Override
        public Flux<EchoReply> serverStream(final EchoRequest request)
        {
            return watch("serverStream", Flux.just(EchoReply.newBuilder().setIndex(0).build())
                .concatWith(Flux.never()));
        }

        @Override
        public Mono<EchoReply> clientStream(final Flux<EchoRequest> requests)
        {
            return watch("clientStream", requests.thenMany(Flux.<EchoReply>never())).next();
        }

        @Override
        public Flux<EchoReply> bidi(final Flux<EchoRequest> requests)
        {
            return watch("bidi", requests.thenMany(Flux.never()));
        }
    }
}
