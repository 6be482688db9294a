package io.reverb.rpc;

import com.google.protobuf.ByteString;
import com.google.protobuf.BytesValue;
import com.google.protobuf.Int32Value;
import com.google.protobuf.MessageLite;
import com.google.protobuf.StringValue;
import io.reverb.rpc.protobuf.ProtoMarshaller;
import io.reverb.rpc.stub.ServerCalls;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * A service for the call suite, with descriptors written by hand over protobuf well-known types (no protoc), and
 * probes that let tests see what the server side did: calls started, cancellations, demand outstanding.
 */
public final class TestService implements RpcService
{
    /** Service name. */
    public static final String SERVICE = "reverb.test.TestService";

    /** Echoes; special requests: "fail:msg" throws, "status:CODE:msg" answers that status, "sleep" never answers. */
    public static final MethodDescriptor<StringValue, StringValue> ECHO = method("Echo", MethodDescriptor.MethodType.UNARY,
        StringValue.getDefaultInstance(), StringValue.getDefaultInstance());
    /** Answers with a BytesValue of the requested size. */
    public static final MethodDescriptor<Int32Value, BytesValue> BLOB = method("Blob", MethodDescriptor.MethodType.UNARY,
        Int32Value.getDefaultInstance(), BytesValue.getDefaultInstance());
    /** Answers with the request's size. */
    public static final MethodDescriptor<BytesValue, Int32Value> SIZE = method("Size", MethodDescriptor.MethodType.UNARY,
        BytesValue.getDefaultInstance(), Int32Value.getDefaultInstance());
    /** Streams 0..n-1, each padded with 1 KiB so that buffering would show in the transport's accounting. */
    public static final MethodDescriptor<Int32Value, BytesValue> RANGE = method("Range",
        MethodDescriptor.MethodType.SERVER_STREAMING, Int32Value.getDefaultInstance(), BytesValue.getDefaultInstance());
    /** Never answers: a stream that only ends by cancellation. */
    public static final MethodDescriptor<Int32Value, Int32Value> NEVER = method("Never",
        MethodDescriptor.MethodType.SERVER_STREAMING, Int32Value.getDefaultInstance(), Int32Value.getDefaultInstance());
    /** Sums the requests. */
    /** Sends its request back, then never ends the stream. */
    public static final MethodDescriptor<Int32Value, Int32Value> ONE_THEN_HANG = method("OneThenHang",
        MethodDescriptor.MethodType.SERVER_STREAMING, Int32Value.getDefaultInstance(), Int32Value.getDefaultInstance());
    /** {@link #ONE_THEN_HANG} as a client that expects a unary response sees it: a response without a status. */
    public static final MethodDescriptor<Int32Value, Int32Value> ONE_THEN_HANG_AS_UNARY = method("OneThenHang",
        MethodDescriptor.MethodType.UNARY, Int32Value.getDefaultInstance(), Int32Value.getDefaultInstance());
    public static final MethodDescriptor<Int32Value, Int32Value> SUM = method("Sum",
        MethodDescriptor.MethodType.CLIENT_STREAMING, Int32Value.getDefaultInstance(), Int32Value.getDefaultInstance());
    /** Sums the requests, slowly: takes one at a time with a pause every 1000. */
    public static final MethodDescriptor<Int32Value, Int32Value> SLOW_SUM = method("SlowSum",
        MethodDescriptor.MethodType.CLIENT_STREAMING, Int32Value.getDefaultInstance(), Int32Value.getDefaultInstance());
    /** Echoes each request; a request of -1 makes the server end the call early with OK. */
    public static final MethodDescriptor<Int32Value, Int32Value> BIDI = method("Bidi",
        MethodDescriptor.MethodType.BIDI_STREAMING, Int32Value.getDefaultInstance(), Int32Value.getDefaultInstance());

    /** Calls whose handler was invoked. */
    public final AtomicInteger callsStarted = new AtomicInteger();
    /** Handler publishers cancelled. */
    public final AtomicInteger cancellations = new AtomicInteger();
    /** Counted down at each cancellation. */
    public volatile CountDownLatch cancelled = new CountDownLatch(1);
    /** Range: most demand outstanding (requested, not yet emitted) at any time. */
    public final AtomicLong rangeMaxOutstanding = new AtomicLong();

    static <Q, R> MethodDescriptor<Q, R> method(final String name, final MethodDescriptor.MethodType type,
        final MessageLite request, final MessageLite response)
    {
        @SuppressWarnings("unchecked")
        final Marshaller<Q> q = (Marshaller<Q>)ProtoMarshaller.of(request);
        @SuppressWarnings("unchecked")
        final Marshaller<R> r = (Marshaller<R>)ProtoMarshaller.of(response);
        return MethodDescriptor.<Q, R>newBuilder()
            .type(type)
            .fullMethodName(MethodDescriptor.generateFullMethodName(SERVICE, name))
            .requestMarshaller(q)
            .responseMarshaller(r)
            .build();
    }

    private void onCancel()
    {
        cancellations.incrementAndGet();
        cancelled.countDown();
    }

    @Override
    public ServiceDefinition bindService()
    {
        return ServiceDefinition.builder(SERVICE)
            .addMethod(ECHO, ServerCalls.unary(this::echo))
            .addMethod(BLOB, ServerCalls.unary(n -> Mono.just(BytesValue.newBuilder()
                .setValue(ByteString.copyFrom(new byte[n.getValue()])).build())))
            .addMethod(SIZE, ServerCalls.unary(b -> Mono.just(Int32Value.of(b.getValue().size()))))
            .addMethod(RANGE, ServerCalls.serverStreaming(this::range))
            .addMethod(NEVER, ServerCalls.serverStreaming(n ->
            {
                callsStarted.incrementAndGet();
                return Flux.<Int32Value>never().doOnCancel(this::onCancel);
            }))
            .addMethod(ONE_THEN_HANG, ServerCalls.serverStreaming(n ->
            {
                callsStarted.incrementAndGet();
                return Flux.just(n).concatWith(Flux.never());
            }))
            .addMethod(SUM, ServerCalls.clientStreaming(requests ->
            {
                callsStarted.incrementAndGet();
                return requests.reduce(0, (a, b) -> a + b.getValue()).map(Int32Value::of).doOnCancel(this::onCancel);
            }))
            .addMethod(SLOW_SUM, ServerCalls.clientStreaming(requests ->
            {
                callsStarted.incrementAndGet();
                return requests
                    .concatMap(v -> v.getValue() % 1000 == 999 ? Mono.just(v).delayElement(Duration.ofMillis(20))
                        : Mono.just(v), 1)
                    .reduce(0, (a, b) -> a + b.getValue()).map(Int32Value::of).doOnCancel(this::onCancel);
            }))
            .addMethod(BIDI, ServerCalls.bidiStreaming(requests ->
            {
                callsStarted.incrementAndGet();
                return requests.takeWhile(v -> v.getValue() != -1).doOnCancel(this::onCancel);
            }))
            .build();
    }

    private Mono<StringValue> echo(final StringValue request)
    {
        callsStarted.incrementAndGet();
        final String text = request.getValue();
        if (text.startsWith("fail:"))
        {
            throw new IllegalStateException(text.substring(5));
        }
        if (text.startsWith("status:"))
        {
            final String[] parts = text.split(":", 3);
            final Metadata trailers = new Metadata();
            trailers.put(Metadata.Key.of("detail-bin", Metadata.BINARY_BYTE_MARSHALLER), new byte[]{1, 2, 3});
            return Mono.error(Status.fromCode(StatusCode.valueOf(parts[1])).withDescription(parts[2]).asException(trailers));
        }
        if (text.equals("sleep"))
        {
            return Mono.delay(Duration.ofMinutes(5)).map(x -> request).doOnCancel(this::onCancel);
        }
        if (text.equals("context"))
        {
            return RpcContext.current().map(ctx -> StringValue.of(ctx.method().fullMethodName() + " deadline=" +
                (ctx.deadline() != null)));
        }
        return Mono.just(request);
    }

    private Flux<BytesValue> range(final Int32Value count)
    {
        callsStarted.incrementAndGet();
        final AtomicLong outstanding = new AtomicLong();
        final ByteString padding = ByteString.copyFrom(new byte[1024]);
        return Flux.range(0, count.getValue())
            .map(i -> BytesValue.newBuilder().setValue(padding.concat(
                ByteString.copyFromUtf8(Integer.toString(i)))).build())
            .doOnRequest(n ->
            {
                final long now = outstanding.addAndGet(n);
                rangeMaxOutstanding.accumulateAndGet(now, Math::max);
            })
            .doOnNext(v -> outstanding.decrementAndGet())
            .doOnCancel(this::onCancel);
    }
}
