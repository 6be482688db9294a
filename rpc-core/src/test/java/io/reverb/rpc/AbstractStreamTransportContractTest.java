package io.reverb.rpc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.google.protobuf.ByteString;
import com.google.protobuf.BytesValue;
import com.google.protobuf.Int32Value;
import com.google.protobuf.StringValue;
import io.reverb.rpc.retry.AttemptFailure;
import io.reverb.rpc.retry.CallFailureCause;
import io.reverb.rpc.stub.ServerCalls;
import io.reverb.rpc.transport.ResourceUsage;
import io.reverb.rpc.transport.Transports;
import io.reverb.rpc.transport.stream.ClientStream;
import io.reverb.rpc.transport.stream.ClientStreamListener;
import io.reverb.rpc.transport.stream.ClientTransport;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.reactivestreams.Publisher;
import reactor.core.publisher.Flux;

/**
 * The stream SPI's contract ({@link ClientTransport} / {@link ClientStream} / {@link ClientStreamListener}) against a
 * real {@link RpcServer}, for every transport: the port of reverb-grpc's {@code AbstractTransportContractTest} (itself
 * after grpc-java's {@code AbstractTransportTest}) to Reverb's own stream level. Subclass it with
 * {@link #newServerUri()}; rpc-core runs it over {@code inproc://}, rdma-transport over shm, tcp, reverb and rdma
 * (rpc-core publishes its tests as a test-jar).
 *
 * <p>Every stream of a test is opened through {@link #open}, whose listener checks the listener contract as the
 * callbacks come (never two at once, headers at most once and before any message, no more messages than asked for
 * with {@code request(n)}, nothing after {@code closed}); after each test the connection is closed and every stream
 * must have been closed exactly once, and the transport must hold no buffers. Counted, never timed: the timeouts only
 * turn a hang into a failure (the one deadline in the suite is the thing under test).
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
public abstract class AbstractStreamTransportContractTest
{
    /** Generous: a loaded 2-core machine must not fail these. */
    protected static final Duration TIMEOUT = Duration.ofSeconds(20);
    /** The inbound message limit of both sides. */
    private static final int LIMIT = 16 * 1024;
    private static final String PROBE_SERVICE = "reverb.test.StreamContract";
    /** Sends {@code n} messages (0, 1, ...) then never ends: a stream that ends only when something ends it. */
    private static final MethodDescriptor<Int32Value, Int32Value> HOLD = TestService.NEVER.toBuilder()
        .fullMethodName(MethodDescriptor.generateFullMethodName(PROBE_SERVICE, "Hold")).build();
    private static final Metadata.Key<String> HEADER = Metadata.Key.of("x-contract-header", Metadata.ASCII_STRING_MARSHALLER);
    private static final Metadata.Key<String> TRAILER = Metadata.Key.of("x-contract-trailer",
        Metadata.ASCII_STRING_MARSHALLER);
    private static final Metadata.Key<byte[]> DETAIL = Metadata.Key.of("detail-bin", Metadata.BINARY_BYTE_MARSHALLER);

    protected String serverUri;
    protected RpcServer server;
    protected RpcClientConnection connection;
    protected ClientTransport transport;
    private TestService service;
    /** HOLD handlers invoked. */
    private final Semaphore holdStarted = new Semaphore(0);
    /** HOLD handlers cancelled (by CANCEL, the deadline or the connection's end). */
    private final Semaphore holdCancelled = new Semaphore(0);
    private final List<Recorder<?>> recorders = new CopyOnWriteArrayList<>();

    /**
     * @return a fresh server address for this transport, unique per call (e.g. {@code "inproc://contract-42"}).
     */
    protected abstract String newServerUri();

    /**
     * Makes the server's side of every connection die as if its process were killed.
     *
     * @param uri the server's address.
     * @return false if this transport cannot simulate it (the test is then skipped).
     */
    protected boolean killServerConnections(final String uri)
    {
        return false;
    }

    /**
     * @param builder the server's builder.
     * @return it, configured for this transport.
     */
    protected RpcServer.Builder configureServer(final RpcServer.Builder builder)
    {
        return builder;
    }

    /**
     * @param builder the connection's settings.
     * @return them, configured for this transport.
     */
    protected RpcChannel.Builder configureChannel(final RpcChannel.Builder builder)
    {
        return builder;
    }

    /**
     * @return the transport's resource accounting, which must return to zero after each test.
     */
    protected ResourceUsage transportUsage()
    {
        return Transports.providerFor(Transports.parse(serverUri)).resourceUsage();
    }

    @BeforeEach
    void startServerAndConnect() throws Exception
    {
        serverUri = newServerUri();
        service = new TestService();
        server = configureServer(RpcServer.builder(serverUri)
            .addService(service)
            .addService(ServiceDefinition.builder(PROBE_SERVICE)
                .addMethod(HOLD, ServerCalls.serverStreaming(n ->
                {
                    holdStarted.release();
                    return Flux.range(0, n.getValue()).map(Int32Value::of).concatWith(Flux.never())
                        .doOnCancel(holdCancelled::release);
                }))
                .build())
            .intercept(new ServerInterceptor()
            {
                @Override
                public <Q, R> Publisher<R> interceptCall(final RpcContext ctx, final Flux<Q> requests,
                    final ServerCallHandler<Q, R> next)
                {
                    ctx.responseHeaders().put(HEADER, "h");
                    return Flux.from(next.handle(requests)).doOnComplete(() -> ctx.responseTrailers().put(TRAILER, "t"));
                }
            })
            .maxInboundMessageSize(LIMIT)).build().start();
        connection = RpcClientConnection.create(configureChannel(RpcChannel.builder(serverUri)).maxInboundMessageSize(LIMIT));
        connection.connect().get(TIMEOUT.toSeconds(), TimeUnit.SECONDS);
        transport = ClientTransport.of(connection);
    }

    @AfterEach
    void closeAndCheckEveryStreamClosedOnce() throws Exception
    {
        if (connection != null)
        {
            connection.close();
        }
        if (server != null)
        {
            server.shutdown(Duration.ZERO);
            assertThat(server.awaitTermination(TIMEOUT)).isTrue();
        }
        for (final Recorder<?> r : recorders)
        {
            // a stream still open when the connection closed was closed by that close, on its thread or the transport's
            r.awaitClosed();
            assertThat(r.violations).as("listener contract of %s", r.method.fullMethodName()).isEmpty();
            assertThat(r.closes.get()).as("closed() calls of %s", r.method.fullMethodName()).isEqualTo(1);
        }
        if (serverUri == null)
        {
            return;
        }
        final ResourceUsage usage = transportUsage();
        final long deadline = System.nanoTime() + TIMEOUT.toNanos();
        while (usage.buffersInUse() != 0 || usage.bytesInUse() != 0)
        {
            if (System.nanoTime() - deadline > 0)
            {
                fail("transport resources leaked: " + usage.describe());
            }
            Thread.sleep(5); // waits for the transport's own release, not for the code under test to act
        }
    }

    // ------------------------------------------------------------------ the four shapes

    @Test
    void unaryShouldCarryTheRequestAndEndWithTheResponseAndOk()
    {
        final Recorder<StringValue> r = new Recorder<>(TestService.ECHO);
        final ClientStream<StringValue> stream = open(TestService.ECHO, CallOptions.DEFAULT, r);
        request(stream, r, 1);
        stream.writeMessage(StringValue.of("hi"));
        stream.halfClose();

        assertThat(r.awaitClosed().code()).isEqualTo(StatusCode.OK);
        assertThat(r.messages).containsExactly(StringValue.of("hi"));
        assertThat(service.callsStarted.get()).as("the server saw the request").isEqualTo(1);
        assertThat(r.trailers.get(TRAILER)).isEqualTo("t");
        assertThat(r.headers).as("the headers the server's interceptor set").isNotNull();
        assertThat(r.headers.get(HEADER)).isEqualTo("h");
    }

    @Test
    void serverStreamingShouldSendNoMoreThanRequestedAndHeadersFirst()
    {
        final Recorder<BytesValue> r = new Recorder<>(TestService.RANGE);
        final ClientStream<Int32Value> stream = open(TestService.RANGE, CallOptions.DEFAULT, r);
        request(stream, r, 1);
        stream.writeMessage(Int32Value.of(6));
        stream.halfClose();
        r.awaitMessages(1);
        assertThat(r.headers).as("headers arrive before the first message").isNotNull();
        assertThat(r.headers.get(HEADER)).isEqualTo("h");
        request(stream, r, 2);
        r.awaitMessages(2);
        request(stream, r, 10);
        r.awaitMessages(3);

        assertThat(r.awaitClosed().code()).isEqualTo(StatusCode.OK);
        assertThat(r.messages).hasSize(6);
        for (int i = 0; i < 6; i++)
        {
            assertThat(r.messages.get(i).getValue().substring(1024).toStringUtf8()).isEqualTo(Integer.toString(i));
        }
        assertThat(r.trailers.get(TRAILER)).isEqualTo("t");
        // the client checked each message against its grants; the server's handler never saw more demand than granted
        assertThat(service.rangeMaxOutstanding.get()).isLessThanOrEqualTo(10);
    }

    @Test
    void clientStreamingShouldEndAtHalfClose()
    {
        final Recorder<Int32Value> r = new Recorder<>(TestService.SUM);
        final ClientStream<Int32Value> stream = open(TestService.SUM, CallOptions.DEFAULT, r);
        request(stream, r, 1);
        for (int i = 1; i <= 100; i++)
        {
            stream.writeMessage(Int32Value.of(i)); // beyond the server's credit they wait in the stream, in order
        }
        stream.halfClose();

        assertThat(r.awaitClosed().code()).isEqualTo(StatusCode.OK);
        assertThat(r.messages).containsExactly(Int32Value.of(5050));
    }

    @Test
    void clientStreamingShouldSayWhenTheServerGrantsMore() throws Exception
    {
        final Recorder<Int32Value> r = new Recorder<>(TestService.SUM);
        final ClientStream<Int32Value> stream = open(TestService.SUM, CallOptions.DEFAULT, r);
        request(stream, r, 1);
        final int n = 300;
        int waits = 0;
        for (int i = 1; i <= n; i++)
        {
            // writes only while isReady(), and otherwise waits for onReady(): it must come, or this never ends
            while (!stream.isReady())
            {
                assertThat(r.ready.tryAcquire(TIMEOUT.toSeconds(), TimeUnit.SECONDS)).as("onReady after message %d", i)
                    .isTrue();
                waits++;
            }
            stream.writeMessage(Int32Value.of(i));
        }
        stream.halfClose();

        assertThat(r.awaitClosed().code()).isEqualTo(StatusCode.OK);
        assertThat(r.messages).containsExactly(Int32Value.of(n * (n + 1) / 2));
        assertThat(waits).as("onReady calls waited for").isLessThanOrEqualTo(r.readies.get());
    }

    @Test
    void bidiShouldExchangeMessagesThenEndAtHalfClose()
    {
        final Recorder<Int32Value> r = new Recorder<>(TestService.BIDI);
        final ClientStream<Int32Value> stream = open(TestService.BIDI, CallOptions.DEFAULT, r);
        request(stream, r, 1);
        stream.writeMessage(Int32Value.of(1));
        r.awaitMessages(1);
        request(stream, r, 1);
        stream.writeMessage(Int32Value.of(2));
        r.awaitMessages(1);
        stream.halfClose();

        assertThat(r.awaitClosed().code()).isEqualTo(StatusCode.OK);
        assertThat(r.messages).containsExactly(Int32Value.of(1), Int32Value.of(2));
    }

    // ------------------------------------------------------------------ cancel and deadline

    @Test
    void cancelBeforeTheResponseShouldCloseCancelledOnceAndReachTheServer() throws Exception
    {
        final Recorder<Int32Value> r = new Recorder<>(HOLD);
        final ClientStream<Int32Value> stream = startHold(r, 0);
        assertThat(holdStarted.tryAcquire(TIMEOUT.toSeconds(), TimeUnit.SECONDS)).isTrue();
        stream.cancel(Status.CANCELLED.withDescription("by the test"));
        stream.cancel(Status.CANCELLED.withDescription("twice"));

        assertThat(r.awaitClosed().code()).isEqualTo(StatusCode.CANCELLED);
        assertThat(r.messages).isEmpty();
        assertThat(holdCancelled.tryAcquire(TIMEOUT.toSeconds(), TimeUnit.SECONDS)).as("the server saw the cancel").isTrue();
        assertThat(unary("still usable")).isEqualTo(StatusCode.OK);
    }

    @Test
    void cancelAfterAResponseShouldCloseCancelledOnceAndReachTheServer() throws Exception
    {
        final Recorder<Int32Value> r = new Recorder<>(HOLD);
        final ClientStream<Int32Value> stream = startHold(r, 1);
        r.awaitMessages(1);
        stream.cancel(Status.CANCELLED);

        assertThat(r.awaitClosed().code()).isEqualTo(StatusCode.CANCELLED);
        assertThat(r.messages).containsExactly(Int32Value.of(0));
        assertThat(holdCancelled.tryAcquire(TIMEOUT.toSeconds(), TimeUnit.SECONDS)).as("the server saw the cancel").isTrue();
        stream.request(1);
        stream.halfClose();
    }

    @Test
    void cancelBeforeTheCallLeftShouldCloseCancelledOnce()
    {
        final Recorder<StringValue> r = new Recorder<>(TestService.ECHO);
        final ClientStream<StringValue> stream = open(TestService.ECHO, CallOptions.DEFAULT, r);
        request(stream, r, 1);
        stream.writeMessage(StringValue.of("never sent")); // a one-message stream leaves at halfClose
        stream.cancel(Status.CANCELLED);
        stream.halfClose();

        assertThat(r.awaitClosed().code()).isEqualTo(StatusCode.CANCELLED);
        assertThat(r.messages).isEmpty();
        assertThat(unary("still usable")).isEqualTo(StatusCode.OK);
    }

    @Test
    void deadlineShouldEndTheStreamDeadlineExceededOnceAndCancelTheServer() throws Exception
    {
        final Recorder<Int32Value> r = new Recorder<>(HOLD);
        final ClientStream<Int32Value> stream = open(HOLD, CallOptions.DEFAULT.withDeadlineAfter(Duration.ofMillis(200)), r);
        request(stream, r, 1);
        stream.writeMessage(Int32Value.of(0));
        stream.halfClose();

        assertThat(r.awaitClosed().code()).isEqualTo(StatusCode.DEADLINE_EXCEEDED);
        // the handler may not have started when the deadline passed (a loaded host): then nothing is left to cancel
        if (holdStarted.tryAcquire())
        {
            assertThat(holdCancelled.tryAcquire(TIMEOUT.toSeconds(), TimeUnit.SECONDS)).as("the server ended the call")
                .isTrue();
        }

        final Recorder<StringValue> late = new Recorder<>(TestService.ECHO);
        final ClientStream<StringValue> expired = open(TestService.ECHO,
            CallOptions.DEFAULT.withDeadlineAfter(Duration.ofNanos(-1)), late);
        request(expired, late, 1);
        expired.writeMessage(StringValue.of("late"));
        expired.halfClose();
        assertThat(late.awaitClosed().code()).isEqualTo(StatusCode.DEADLINE_EXCEEDED);
        assertThat(unary("still usable")).isEqualTo(StatusCode.OK);
        assertThat(service.callsStarted.get()).as("only the last call reached ECHO").isEqualTo(1);
    }

    // ------------------------------------------------------------------ errors

    @Test
    void unknownMethodAndServiceShouldCloseUnimplemented()
    {
        for (final String name : new String[] {TestService.SERVICE + "/Nope", "reverb.test.Nowhere/Echo"})
        {
            final MethodDescriptor<StringValue, StringValue> unknown = TestService.ECHO.toBuilder().fullMethodName(name)
                .build();
            final Recorder<StringValue> r = new Recorder<>(unknown);
            final ClientStream<StringValue> stream = open(unknown, CallOptions.DEFAULT, r);
            request(stream, r, 1);
            stream.writeMessage(StringValue.of("x"));
            stream.halfClose();
            assertThat(r.awaitClosed().code()).as(name).isEqualTo(StatusCode.UNIMPLEMENTED);
            assertThat(r.messages).isEmpty();
        }
        assertThat(service.callsStarted.get()).isZero();
    }

    @Test
    void oversizedRequestShouldCloseResourceExhaustedAndKeepTheConnectionUsable()
    {
        final Recorder<Int32Value> r = new Recorder<>(TestService.SIZE);
        final ClientStream<BytesValue> stream = open(TestService.SIZE, CallOptions.DEFAULT, r);
        request(stream, r, 1);
        stream.writeMessage(BytesValue.of(ByteString.copyFrom(new byte[2 * LIMIT])));
        stream.halfClose();
        assertThat(r.awaitClosed().code()).isEqualTo(StatusCode.RESOURCE_EXHAUSTED);

        final Recorder<Int32Value> small = new Recorder<>(TestService.SIZE);
        final ClientStream<BytesValue> next = open(TestService.SIZE, CallOptions.DEFAULT, small);
        request(next, small, 1);
        next.writeMessage(BytesValue.of(ByteString.copyFrom(new byte[100])));
        next.halfClose();
        assertThat(small.awaitClosed().code()).isEqualTo(StatusCode.OK);
        assertThat(small.messages).containsExactly(Int32Value.of(100));
    }

    @Test
    void oversizedResponseShouldCloseResourceExhaustedAndKeepTheConnectionUsable()
    {
        final Recorder<BytesValue> r = new Recorder<>(TestService.BLOB);
        final ClientStream<Int32Value> stream = open(TestService.BLOB, CallOptions.DEFAULT, r);
        request(stream, r, 1);
        stream.writeMessage(Int32Value.of(2 * LIMIT));
        stream.halfClose();
        assertThat(r.awaitClosed().code()).isEqualTo(StatusCode.RESOURCE_EXHAUSTED);
        assertThat(r.messages).isEmpty();
        assertThat(unary("still usable")).isEqualTo(StatusCode.OK);
    }

    @Test
    void serverStatusAndTrailersShouldReachTheListener()
    {
        final Recorder<StringValue> r = new Recorder<>(TestService.ECHO);
        final ClientStream<StringValue> stream = open(TestService.ECHO, CallOptions.DEFAULT, r);
        request(stream, r, 1);
        stream.writeMessage(StringValue.of("status:FAILED_PRECONDITION:naïve ✓"));
        stream.halfClose();
        final Status status = r.awaitClosed();
        assertThat(status.code()).isEqualTo(StatusCode.FAILED_PRECONDITION);
        assertThat(status.description()).isEqualTo("naïve ✓");
        assertThat(r.trailers.get(DETAIL)).containsExactly(1, 2, 3);
        assertThat(r.messages).isEmpty();

        final Recorder<StringValue> thrown = new Recorder<>(TestService.ECHO);
        final ClientStream<StringValue> failing = open(TestService.ECHO, CallOptions.DEFAULT, thrown);
        request(failing, thrown, 1);
        failing.writeMessage(StringValue.of("fail:boom"));
        failing.halfClose();
        assertThat(thrown.awaitClosed().code()).isEqualTo(StatusCode.UNKNOWN);
        assertThat(thrown.status.description()).as("nothing of the handler's exception").isNull();
    }

    // ------------------------------------------------------------------ many streams, the connection's end

    @Test
    void manyConcurrentStreamsShouldEachCloseOnceWithTheirOwnResponse()
    {
        final int n = 200;
        final List<Recorder<StringValue>> all = new ArrayList<>();
        final List<ClientStream<StringValue>> streams = new ArrayList<>();
        for (int i = 0; i < n; i++)
        {
            final Recorder<StringValue> r = new Recorder<>(TestService.ECHO);
            final ClientStream<StringValue> stream = open(TestService.ECHO, CallOptions.DEFAULT, r);
            request(stream, r, 1);
            stream.writeMessage(StringValue.of("m" + i));
            all.add(r);
            streams.add(stream);
        }
        for (final ClientStream<StringValue> stream : streams)
        {
            stream.halfClose(); // all of them open at once, then all sent
        }
        for (int i = 0; i < n; i++)
        {
            assertThat(all.get(i).awaitClosed().code()).isEqualTo(StatusCode.OK);
            assertThat(all.get(i).messages).containsExactly(StringValue.of("m" + i));
        }
        assertThat(service.callsStarted.get()).isEqualTo(n);
    }

    @Test
    void closingTheTransportShouldCloseEveryOpenStreamUnavailableOnce() throws Exception
    {
        final int n = 8;
        final List<Recorder<Int32Value>> open = new ArrayList<>();
        for (int i = 0; i < n; i++)
        {
            final Recorder<Int32Value> r = new Recorder<>(HOLD);
            startHold(r, i % 2);
            open.add(r);
        }
        assertThat(holdStarted.tryAcquire(n, TIMEOUT.toSeconds(), TimeUnit.SECONDS)).isTrue();

        connection.close();

        for (final Recorder<Int32Value> r : open)
        {
            assertThat(r.awaitClosed().code()).isEqualTo(StatusCode.UNAVAILABLE);
        }
        assertThat(holdCancelled.tryAcquire(n, TIMEOUT.toSeconds(), TimeUnit.SECONDS))
            .as("the server ended every call of the lost connection").isTrue();
        newStreamAfterTheEndShouldFailAtOnceAsNeverSent();
    }

    /**
     * grpc-java's transports close every stream they created when they are shut down now, a one-message stream whose
     * CALL waits for {@code halfClose()} (and which holds no stream id yet) included.
     */
    @Test
    void closingTheTransportShouldCloseAOneMessageStreamWhoseCallHasNotLeft()
    {
        final Recorder<StringValue> notSent = new Recorder<>(TestService.ECHO);
        final ClientStream<StringValue> waiting = open(TestService.ECHO, CallOptions.DEFAULT, notSent);
        request(waiting, notSent, 1); // not half-closed: its CALL has not left

        connection.close();

        assertThat(notSent.awaitClosed().code()).isEqualTo(StatusCode.UNAVAILABLE);
        waiting.writeMessage(StringValue.of("after the end"));
        waiting.halfClose();
    }

    @Test
    void gracefulShutdownShouldLetOpenStreamsFinishAndRefuseNewOnes()
    {
        final Recorder<Int32Value> r = new Recorder<>(TestService.BIDI);
        final ClientStream<Int32Value> stream = open(TestService.BIDI, CallOptions.DEFAULT, r);
        request(stream, r, 2);
        stream.writeMessage(Int32Value.of(1));
        r.awaitMessages(1);

        connection.shutdown();
        newStreamAfterTheEndShouldFailAtOnceAsNeverSent();

        stream.writeMessage(Int32Value.of(2));
        r.awaitMessages(1);
        stream.halfClose();
        assertThat(r.awaitClosed().code()).isEqualTo(StatusCode.OK);
        assertThat(r.messages).containsExactly(Int32Value.of(1), Int32Value.of(2));
    }

    @Test
    void serverShutdownShouldCloseOpenStreamsUnavailableOnce() throws Exception
    {
        final int n = 4;
        final List<Recorder<Int32Value>> open = new ArrayList<>();
        for (int i = 0; i < n; i++)
        {
            final Recorder<Int32Value> r = new Recorder<>(HOLD);
            startHold(r, 1);
            open.add(r);
        }
        assertThat(holdStarted.tryAcquire(n, TIMEOUT.toSeconds(), TimeUnit.SECONDS)).isTrue();

        server.shutdown(Duration.ZERO);

        for (final Recorder<Int32Value> r : open)
        {
            assertThat(r.awaitClosed().code()).isEqualTo(StatusCode.UNAVAILABLE);
        }
        assertThat(holdCancelled.tryAcquire(n, TIMEOUT.toSeconds(), TimeUnit.SECONDS)).isTrue();
        assertThat(server.awaitTermination(TIMEOUT)).isTrue();
        newStreamAfterTheEndShouldFailAtOnceAsNeverSent();
    }

    @Test
    void lostConnectionShouldCloseOpenStreamsUnavailableOnce() throws Exception
    {
        final int n = 4;
        final List<Recorder<Int32Value>> open = new ArrayList<>();
        for (int i = 0; i < n; i++)
        {
            final Recorder<Int32Value> r = new Recorder<>(HOLD);
            startHold(r, 1);
            open.add(r);
        }
        assertThat(holdStarted.tryAcquire(n, TIMEOUT.toSeconds(), TimeUnit.SECONDS)).isTrue();
        assumeTrue(killServerConnections(serverUri), "this transport cannot kill a connection");

        for (final Recorder<Int32Value> r : open)
        {
            assertThat(r.awaitClosed().code()).isEqualTo(StatusCode.UNAVAILABLE);
        }
        newStreamAfterTheEndShouldFailAtOnceAsNeverSent();
    }

    private void newStreamAfterTheEndShouldFailAtOnceAsNeverSent()
    {
        final Recorder<StringValue> refused = new Recorder<>(TestService.ECHO);
        final ClientStream<StringValue> stream = open(TestService.ECHO, CallOptions.DEFAULT, refused);
        assertThat(refused.closes.get()).as("closed at once, on this thread").isEqualTo(1);
        assertThat(refused.status.code()).isEqualTo(StatusCode.UNAVAILABLE);
        assertThat(CallFailureCause.attemptFailure(refused.status)).as("safe to send elsewhere")
            .isEqualTo(AttemptFailure.NOT_SENT);
        // using the ended stream is harmless
        stream.request(1);
        stream.writeMessage(StringValue.of("x"));
        stream.halfClose();
        stream.cancel(Status.CANCELLED);
        assertThat(stream.isReady()).isFalse();
    }

    // ------------------------------------------------------------------ harness

    private ClientStream<Int32Value> startHold(final Recorder<Int32Value> r, final int messages)
    {
        final ClientStream<Int32Value> stream = open(HOLD, CallOptions.DEFAULT, r);
        request(stream, r, 1);
        stream.writeMessage(Int32Value.of(messages));
        stream.halfClose();
        return stream;
    }

    /** @return the end of one ECHO stream on the connection. */
    private StatusCode unary(final String text)
    {
        final Recorder<StringValue> r = new Recorder<>(TestService.ECHO);
        final ClientStream<StringValue> stream = open(TestService.ECHO, CallOptions.DEFAULT, r);
        request(stream, r, 1);
        stream.writeMessage(StringValue.of(text));
        stream.halfClose();
        final StatusCode code = r.awaitClosed().code();
        if (code == StatusCode.OK)
        {
            assertThat(r.messages).containsExactly(StringValue.of(text));
        }
        return code;
    }

    protected <Req> ClientStream<Req> open(final MethodDescriptor<Req, ?> method, final CallOptions options,
        final Recorder<?> recorder)
    {
        recorders.add(recorder);
        return transport.newStream(method, options, recorder);
    }

    /** Grants {@code n} more responses, counting them first so that the listener can check the transport keeps to them. */
    private static void request(final ClientStream<?> stream, final Recorder<?> recorder, final int n)
    {
        recorder.granted.addAndGet(n);
        stream.request(n);
    }

    /**
     * A listener that parses each response and checks the listener contract as the callbacks come.
     *
     * @param <Resp> response type.
     */
    protected static final class Recorder<Resp> implements ClientStreamListener
    {
        final MethodDescriptor<?, Resp> method;
        final List<Resp> messages = new CopyOnWriteArrayList<>();
        final List<String> violations = new CopyOnWriteArrayList<>();
        final AtomicInteger closes = new AtomicInteger();
        final AtomicLong granted = new AtomicLong();
        private final AtomicInteger inCallback = new AtomicInteger();
        private final Semaphore received = new Semaphore(0);
        /** Released at each onReady. */
        final Semaphore ready = new Semaphore(0);
        final AtomicInteger readies = new AtomicInteger();
        private final CountDownLatch closed = new CountDownLatch(1);
        volatile Metadata headers;
        volatile Status status;
        volatile Metadata trailers;

        Recorder(final MethodDescriptor<?, Resp> method)
        {
            this.method = method;
        }

        @Override
        public void headersRead(final Metadata h)
        {
            enter("headersRead");
            if (headers != null)
            {
                violations.add("headers twice");
            }
            if (!messages.isEmpty())
            {
                violations.add("headers after a message");
            }
            headers = h;
            leave();
        }

        @Override
        public void messageRead(final ByteBuffer message)
        {
            enter("messageRead");
            messages.add(method.responseMarshaller().read(message));
            if (messages.size() > granted.get())
            {
                violations.add("message " + messages.size() + " beyond the " + granted.get() + " requested");
            }
            leave();
            received.release();
        }

        @Override
        public void onReady()
        {
            enter("onReady");
            readies.incrementAndGet();
            leave();
            ready.release();
        }

        @Override
        public void closed(final Status s, final Metadata t)
        {
            enter("closed");
            if (closes.incrementAndGet() == 1)
            {
                trailers = t;
                status = s;
            }
            leave();
            closed.countDown();
        }

        private void enter(final String callback)
        {
            if (closes.get() > 0)
            {
                violations.add(callback + " after closed");
            }
            if (inCallback.getAndIncrement() != 0)
            {
                violations.add(callback + " while another callback ran");
            }
        }

        private void leave()
        {
            inCallback.decrementAndGet();
        }

        /** @return the status it was closed with, once it was. */
        Status awaitClosed()
        {
            try
            {
                assertThat(closed.await(TIMEOUT.toSeconds(), TimeUnit.SECONDS)).as("%s closed", method.fullMethodName())
                    .isTrue();
            }
            catch (final InterruptedException e)
            {
                Thread.currentThread().interrupt();
                throw new AssertionError(e);
            }
            return status;
        }

        /** Waits for {@code n} more messages than were awaited before. */
        void awaitMessages(final int n)
        {
            try
            {
                assertThat(received.tryAcquire(n, TIMEOUT.toSeconds(), TimeUnit.SECONDS))
                    .as("%d more messages of %s (%s so far)", n, method.fullMethodName(), messages.size()).isTrue();
            }
            catch (final InterruptedException e)
            {
                Thread.currentThread().interrupt();
                throw new AssertionError(e);
            }
        }
    }
}
