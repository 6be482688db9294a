package io.reverb.rpc.internal;

import static io.reverb.rpc.internal.RecordingConnection.frameTypes;
import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.ByteString;
import com.google.protobuf.Int32Value;
import com.google.protobuf.StringValue;
import io.reverb.rpc.CallOptions;
import io.reverb.rpc.Deadline;
import io.reverb.rpc.Metadata;
import io.reverb.rpc.MethodDescriptor;
import io.reverb.rpc.RpcServer;
import io.reverb.rpc.Status;
import io.reverb.rpc.StatusCode;
import io.reverb.rpc.TestService;
import io.reverb.rpc.retry.AttemptFailure;
import io.reverb.rpc.retry.CallFailureCause;
import io.reverb.rpc.transport.stream.ClientStream;
import io.reverb.rpc.transport.stream.ClientStreamListener;
import io.reverb.rpc.wire.FrameType;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The stream SPI's client stream ({@link TransportClientStream}) driven by hand through a client and a server
 * connection over recording transports: which frames leave in how many transport messages, demand and credit, and the
 * one close whatever races it. Counted, not timed; the one race is staged with latches.
 */
class TransportClientStreamTest
{
    private final RecordingConnection clientSide = new RecordingConnection();
    private final RecordingConnection serverSide = new RecordingConnection();
    private final ClientTransportImpl host = TestRuntimes.channel();
    private final TestService service = new TestService();
    private final ServerRuntime server = TestRuntimes.server(service);
    private final ClientWireConnection client = new ClientWireConnection(host, RpcServer.DEFAULT_MAX_INBOUND_MESSAGE_SIZE,
        ClientWireConnection.LAST_STREAM_ID);
    private final ServerWireConnection serverConnection = new ServerWireConnection(server, serverSide);
    private int toServer;
    private int toClient;

    TransportClientStreamTest()
    {
        client.attach(clientSide);
    }

    @AfterEach
    void close()
    {
        client.closeWithError(Status.UNAVAILABLE);
    }

    @Test
    void shouldCarryAUnaryStreamAsItsFirstAndLastFramesOneTransportMessageEachWay()
    {
        final Events events = new Events();
        final ClientStream<StringValue> stream = open(TestService.ECHO, CallOptions.DEFAULT, events);
        stream.request(2); // as grpc-java's unary calls ask
        stream.writeMessage(StringValue.of("hi"));
        assertThat(clientSide.messages).as("the message waits for halfClose").isEmpty();
        stream.halfClose();

        assertThat(clientSide.messages).hasSize(1);
        assertThat(frameTypes(clientSide.messages.get(0))).containsExactly(FrameType.CALL, FrameType.MESSAGE);
        pumpToServer();
        assertThat(serverSide.messages).hasSize(1);
        assertThat(frameTypes(serverSide.messages.get(0))).containsExactly(FrameType.MESSAGE, FrameType.STATUS);
        pumpToClient();

        assertThat(events.messages).containsExactly(StringValue.of("hi").toByteString());
        assertThat(events.closes).containsExactly(StatusCode.OK);
        assertThat(events.order).containsExactly("message", "closed");
        assertThat(events.trailersSeen).as("the server sent no trailers: null, no empty object per call").containsOnlyNulls()
            .hasSize(1);
        assertThat(client.streams.isEmpty()).isTrue();
        // nothing more leaves once it ended, and nothing more is reported
        stream.cancel(Status.CANCELLED);
        stream.request(1);
        assertThat(clientSide.messages).hasSize(1);
        assertThat(events.closes).hasSize(1);
    }

    @Test
    void shouldGrantResponsesWithTheCallThenByRequestN()
    {
        final Events events = new Events();
        final ClientStream<Int32Value> stream = open(TestService.RANGE, CallOptions.DEFAULT, events);
        stream.request(1);
        stream.writeMessage(Int32Value.of(3));
        stream.halfClose();
        pumpToServer();
        assertThat(countFrames(serverSide.messages, FrameType.MESSAGE)).as("one response granted with the CALL")
            .isEqualTo(1);

        stream.request(5);
        assertThat(frameTypes(clientSide.messages.get(clientSide.messages.size() - 1)))
            .containsExactly(FrameType.REQUEST_N);
        pumpToServer();
        pumpToClient();

        assertThat(events.messages).hasSize(3);
        assertThat(events.closes).containsExactly(StatusCode.OK);
        assertThat(service.rangeMaxOutstanding.get()).isLessThanOrEqualTo(5);
    }

    @Test
    void shouldHoldMessagesBeyondTheServersCreditAndSendThemWhenItGrantsMore()
    {
        final Events events = new Events();
        final ClientStream<Int32Value> stream = open(TestService.SUM, CallOptions.DEFAULT, events);
        stream.request(1);
        assertThat(frameTypes(clientSide.messages.get(0))).as("CALL leaves at once for a client stream")
            .containsExactly(FrameType.CALL);
        assertThat(stream.isReady()).isTrue();
        stream.writeMessage(Int32Value.of(1));
        assertThat(stream.isReady()).as("the one message granted before the server asks is used").isFalse();
        stream.writeMessage(Int32Value.of(2));
        assertThat(countFrames(clientSide.messages, FrameType.MESSAGE)).as("the second waits for credit").isEqualTo(1);

        // the server's handler asks for more: the waiting message leaves, and isReady turns true again
        for (int round = 0; round < 10 && events.readies == 0; round++)
        {
            pumpToServer();
            pumpToClient();
        }
        assertThat(events.readies).isEqualTo(1);
        assertThat(stream.isReady()).isTrue();
        assertThat(countFrames(clientSide.messages, FrameType.MESSAGE)).isEqualTo(2);

        stream.writeMessage(Int32Value.of(3));
        stream.halfClose();
        for (int round = 0; round < 10 && events.closes.isEmpty(); round++)
        {
            pumpToServer();
            pumpToClient();
        }
        assertThat(countFrames(clientSide.messages, FrameType.MESSAGE)).isEqualTo(3);
        assertThat(countFrames(clientSide.messages, FrameType.HALF_CLOSE)).isEqualTo(1);
        assertThat(events.messages).containsExactly(Int32Value.of(6).toByteString());
        assertThat(events.closes).containsExactly(StatusCode.OK);
    }

    @Test
    void shouldCloseOnceAfterTheMessageCallbackWhenCancelRacesTheResponse() throws Exception
    {
        final CountDownLatch inMessage = new CountDownLatch(1);
        final CountDownLatch release = new CountDownLatch(1);
        final Events events = new Events()
        {
            @Override
            public void messageRead(final ByteBuffer message)
            {
                super.messageRead(message);
                inMessage.countDown();
                await(release);
                order.add("message returns");
            }
        };
        final ClientStream<StringValue> stream = open(TestService.ECHO, CallOptions.DEFAULT, events);
        stream.request(1);
        stream.writeMessage(StringValue.of("race"));
        stream.halfClose();
        pumpToServer();
        // the response and its STATUS, delivered on a transport thread of their own
        final byte[] response = serverSide.messages.get(0);
        final Thread transport = new Thread(() -> client.onMessage(clientSide, ByteBuffer.wrap(response)), "transport");
        transport.start();
        assertThat(inMessage.await(30, TimeUnit.SECONDS)).isTrue();

        stream.cancel(Status.CANCELLED.withDescription("by the test"));
        assertThat(events.closes).as("not while the message callback runs").isEmpty();
        release.countDown();
        transport.join(30_000);

        assertThat(transport.isAlive()).isFalse();
        assertThat(events.closes).containsExactly(StatusCode.CANCELLED);
        assertThat(events.closeThreads).containsExactly("transport");
        assertThat(events.order).containsExactly("message", "message returns", "closed");
        assertThat(client.streams.isEmpty()).isTrue();
    }

    @Test
    void shouldTakeBackACallStillQueuedAndCloseOnceWhenCancelledBeforeItLeft()
    {
        final Events events = new Events();
        final ClientStream<Int32Value> stream = open(TestService.NEVER, CallOptions.DEFAULT, events);
        stream.writeMessage(Int32Value.of(1));
        stream.cancel(Status.CANCELLED);
        stream.cancel(Status.DEADLINE_EXCEEDED);
        stream.halfClose();
        assertThat(clientSide.messages).as("a one-message stream cancelled before halfClose never leaves").isEmpty();
        assertThat(events.closes).containsExactly(StatusCode.CANCELLED);
    }

    @Test
    void shouldCancelAStartedStreamWithItsStatusCodeOnTheWire()
    {
        final Events events = new Events();
        final ClientStream<Int32Value> stream = open(TestService.NEVER, CallOptions.DEFAULT, events);
        stream.request(1);
        stream.writeMessage(Int32Value.of(1));
        stream.halfClose();
        pumpToServer();
        assertThat(service.callsStarted.get()).isEqualTo(1);
        stream.cancel(Status.DEADLINE_EXCEEDED.withDescription("caller's deadline"));
        final byte[] last = clientSide.messages.get(clientSide.messages.size() - 1);
        assertThat(frameTypes(last)).containsExactly(FrameType.CANCEL);
        assertThat(ByteBuffer.wrap(last).order(ByteOrder.LITTLE_ENDIAN).getInt(last.length - 4))
            .isEqualTo(StatusCode.DEADLINE_EXCEEDED.value());
        pumpToServer();
        assertThat(service.cancellations.get()).isEqualTo(1);
        assertThat(events.closes).containsExactly(StatusCode.DEADLINE_EXCEEDED);
        assertThat(client.streams.isEmpty()).isTrue();
    }

    @Test
    void shouldEndAStreamWhoseDeadlinePassedBeforeItStartedWithoutSendingIt()
    {
        final Events events = new Events();
        final CallOptions expired = CallOptions.DEFAULT.withDeadline(
            Deadline.after(0, TimeUnit.NANOSECONDS, Deadline.Ticker.SYSTEM));
        final ClientStream<Int32Value> stream = open(TestService.SUM, expired, events);
        stream.writeMessage(Int32Value.of(1));
        assertThat(clientSide.messages).isEmpty();
        assertThat(events.closes).containsExactly(StatusCode.DEADLINE_EXCEEDED);
    }

    @Test
    void shouldEndAStreamWithoutAConnectionAsNeverSent()
    {
        final Events events = new Events();
        final TransportClientStream<StringValue> stream = new TransportClientStream<>(host, TestService.ECHO,
            CallOptions.DEFAULT, OutboundCompression.NONE, events);
        stream.start(null);
        assertThat(events.closes).containsExactly(StatusCode.UNAVAILABLE);
        assertThat(CallFailureCause.attemptFailure(events.statuses.get(0))).isEqualTo(AttemptFailure.NOT_SENT);
    }

    @Test
    void shouldCloseStreamsWhoseCallHasNotLeftOnceWhenTheConnectionEndsAndForgetThoseThatEndedBefore()
    {
        final Events cancelled = new Events();
        final Events sent = new Events();
        final Events waiting = new Events();
        final ClientStream<StringValue> a = open(TestService.ECHO, CallOptions.DEFAULT, cancelled);
        final ClientStream<StringValue> b = open(TestService.ECHO, CallOptions.DEFAULT, sent);
        final ClientStream<Int32Value> c = open(TestService.RANGE, CallOptions.DEFAULT.withDeadline(
            Deadline.after(1, TimeUnit.HOURS, Deadline.Ticker.SYSTEM)), waiting);
        assertThat(client.unsentCount()).isEqualTo(3);
        a.cancel(Status.CANCELLED);
        b.writeMessage(StringValue.of("b"));
        b.halfClose();
        assertThat(client.unsentCount()).as("cancelled, or its CALL left: off the list").isEqualTo(1);
        c.request(1);
        c.writeMessage(Int32Value.of(3));

        client.onClose(clientSide, null);

        assertThat(cancelled.closes).containsExactly(StatusCode.CANCELLED);
        assertThat(sent.closes).containsExactly(StatusCode.UNAVAILABLE);
        assertThat(CallFailureCause.attemptFailure(sent.statuses.get(0))).as("its CALL left: maybe run")
            .isEqualTo(AttemptFailure.PROCESSED);
        assertThat(waiting.closes).containsExactly(StatusCode.UNAVAILABLE);
        // its CALL never left: not sent (a transparent retry resends it), not lost with the connection (seen in CI:
        // grpc-java's blocking call failed when a server's max connection age closed the connection under it)
        assertThat(CallFailureCause.attemptFailure(waiting.statuses.get(0))).as("never sent")
            .isEqualTo(AttemptFailure.NOT_SENT);
        assertThat(client.unsentCount()).isZero();
        assertThat(client.streams.isEmpty()).isTrue();
        c.halfClose();
        client.closeWithError(Status.INTERNAL);
        assertThat(clientSide.messages).as("only b's CALL ever left").hasSize(1);
        assertThat(waiting.closes).hasSize(1);
    }

    @Test
    void shouldSendNoCallAndCloseOnceWhenHalfCloseRacesTheConnectionsEnd()
    {
        // the sweep closes the streams whose CALL waits one at a time; the first one's closed() half-closes the
        // second while it still waits there, on a connection that is ending but not yet marked closed
        final Events second = new Events();
        final List<ClientStream<StringValue>> later = new ArrayList<>();
        final Events first = new Events()
        {
            @Override
            public void closed(final Status status, final Metadata trailers)
            {
                super.closed(status, trailers);
                later.get(0).halfClose();
            }
        };
        final ClientStream<StringValue> halfClosedDuringTheEnd = open(TestService.ECHO, CallOptions.DEFAULT, second);
        halfClosedDuringTheEnd.writeMessage(StringValue.of("too late"));
        later.add(halfClosedDuringTheEnd);
        open(TestService.ECHO, CallOptions.DEFAULT, first); // the list's head: swept first

        client.closeWithError(Status.UNAVAILABLE.withDescription("by the test"));

        assertThat(first.closes).containsExactly(StatusCode.UNAVAILABLE);
        assertThat(CallFailureCause.attemptFailure(first.statuses.get(0))).isEqualTo(AttemptFailure.NOT_SENT);
        assertThat(second.closes).as("once, by whichever ended it first").containsExactly(StatusCode.UNAVAILABLE);
        assertThat(CallFailureCause.attemptFailure(second.statuses.get(0))).isEqualTo(AttemptFailure.NOT_SENT);
        assertThat(clientSide.messages).as("no CALL on the ending connection").isEmpty();
        assertThat(client.streams.isEmpty()).as("no stream id registered and left behind").isTrue();
        assertThat(client.unsentCount()).isZero();
    }

    @Test
    void shouldEndAOneMessageStreamStartedOnAnEndedConnectionAtOnce()
    {
        client.closeWithError(Status.UNAVAILABLE);
        final Events events = new Events();
        open(TestService.ECHO, CallOptions.DEFAULT, events);
        assertThat(events.closes).containsExactly(StatusCode.UNAVAILABLE);
        assertThat(CallFailureCause.attemptFailure(events.statuses.get(0))).isEqualTo(AttemptFailure.NOT_SENT);
        assertThat(client.unsentCount()).isZero();
    }

    // ---------------------------------------------------------------- harness

    private <Req> ClientStream<Req> open(final MethodDescriptor<Req, ?> method, final CallOptions options,
        final ClientStreamListener listener)
    {
        final TransportClientStream<Req> stream = new TransportClientStream<>(host, method, options,
            OutboundCompression.NONE, listener);
        stream.start(client);
        return stream;
    }

    private void pumpToServer()
    {
        while (toServer < clientSide.messages.size())
        {
            serverConnection.onMessage(serverSide, ByteBuffer.wrap(clientSide.messages.get(toServer++)));
        }
    }

    private void pumpToClient()
    {
        while (toClient < serverSide.messages.size())
        {
            client.onMessage(clientSide, ByteBuffer.wrap(serverSide.messages.get(toClient++)));
        }
    }

    private static int countFrames(final List<byte[]> messages, final FrameType type)
    {
        int n = 0;
        for (final byte[] message : messages)
        {
            n += Collections.frequency(frameTypes(message), type);
        }
        return n;
    }

    private static void await(final CountDownLatch latch)
    {
        try
        {
            assertThat(latch.await(30, TimeUnit.SECONDS)).isTrue();
        }
        catch (final InterruptedException e)
        {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
    }

    /** Records what the stream reports; messages are copied out of the transport's buffer in the callback. */
    private static class Events implements ClientStreamListener
    {
        final List<ByteString> messages = Collections.synchronizedList(new ArrayList<>());
        final List<StatusCode> closes = Collections.synchronizedList(new ArrayList<>());
        final List<Status> statuses = Collections.synchronizedList(new ArrayList<>());
        final List<Metadata> trailersSeen = Collections.synchronizedList(new ArrayList<>());
        final List<String> closeThreads = Collections.synchronizedList(new ArrayList<>());
        final List<String> order = Collections.synchronizedList(new ArrayList<>());
        volatile int readies;

        @Override
        public void headersRead(final Metadata headers)
        {
            order.add("headers");
        }

        @Override
        public void messageRead(final ByteBuffer message)
        {
            order.add("message");
            messages.add(ByteString.copyFrom(message));
        }

        @Override
        public void onReady()
        {
            readies++;
        }

        @Override
        public void closed(final Status status, final Metadata trailers)
        {
            order.add("closed");
            closes.add(status.code());
            statuses.add(status);
            trailersSeen.add(trailers);
            closeThreads.add(Thread.currentThread().getName());
        }
    }
}
