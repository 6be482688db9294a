package io.reverb.rpc.internal;

import static io.reverb.rpc.internal.RecordingConnection.frameTypes;
import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.Int32Value;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.StringValue;
import io.reverb.rpc.CallOptions;
import io.reverb.rpc.Metadata;
import io.reverb.rpc.RpcServer;
import io.reverb.rpc.Status;
import io.reverb.rpc.StatusCode;
import io.reverb.rpc.TestService;
import io.reverb.rpc.transport.stream.ClientStream;
import io.reverb.rpc.transport.stream.ClientStreamListener;
import io.reverb.rpc.wire.FrameType;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The cork: while the transport's thread delivers a read batch of several transport messages (or a server starts
 * several calls at its end), the frames it writes leave together when the batch ends, in a few transport messages; a
 * lone message (a ping-pong) is answered at once, and a frame another thread writes meanwhile goes after the corked
 * ones. Counted on recording transports that signal the end of their read batches, not timed.
 */
class CorkedBatchWritesTest
{
    private static final int CALLS = 20;

    private final RecordingConnection clientSide = new RecordingConnection(true);
    private final RecordingConnection serverSide = new RecordingConnection(true);
    private final ClientTransportImpl host = TestRuntimes.channel();
    private final TestService service = new TestService();
    private final ServerRuntime server = TestRuntimes.server(service);
    private final ClientWireConnection client = new ClientWireConnection(host, RpcServer.DEFAULT_MAX_INBOUND_MESSAGE_SIZE,
        ClientWireConnection.LAST_STREAM_ID);
    private final ServerWireConnection serverConnection = new ServerWireConnection(server, serverSide);

    CorkedBatchWritesTest()
    {
        client.attach(clientSide);
    }

    @AfterEach
    void close()
    {
        client.closeWithError(Status.UNAVAILABLE);
    }

    @Test
    void shouldAnswerTheCallsOfOneReadBatchInAFewTransportMessages()
    {
        final List<Answers> answers = new ArrayList<>();
        for (int i = 0; i < CALLS; i++)
        {
            answers.add(unary("m" + i));
        }
        assertThat(clientSide.messages).as("each call leaves on its own (not a transport thread)").hasSize(CALLS);

        deliverToServer(0, CALLS); // one read batch of 20 transport messages
        assertThat(countFrames(serverSide.messages, FrameType.STATUS)).isEqualTo(CALLS);
        assertThat(serverSide.messages).as("20 answers in transport messages of up to 4 KiB").hasSizeLessThanOrEqualTo(2);

        deliverToClient(0, serverSide.messages.size());
        for (int i = 0; i < CALLS; i++)
        {
            assertThat(answers.get(i).messages).containsExactly("m" + i);
            assertThat(answers.get(i).closes).containsExactly(StatusCode.OK);
        }
        assertThat(serverConnection.corked()).isFalse();
    }

    @Test
    void shouldAnswerALoneMessageAtOnceBeforeItsBatchEnds()
    {
        final Answers answer = unary("ping");
        serverConnection.onMessage(serverSide, ByteBuffer.wrap(clientSide.messages.get(0)));
        // the call starts at the batch's end (deferred start), but its answer is not corked: one call, one message
        serverConnection.onReadComplete(serverSide);
        assertThat(serverSide.messages).hasSize(1);
        assertThat(frameTypes(serverSide.messages.get(0))).containsExactly(FrameType.MESSAGE, FrameType.STATUS);

        // the client: one response in its batch, and the callback's next call leaves before the batch ends
        answer.onClose = () -> unary("next");
        client.onMessage(clientSide, ByteBuffer.wrap(serverSide.messages.get(0)));
        assertThat(clientSide.messages).as("the next call left inside the delivery").hasSize(2);
        client.onReadComplete(clientSide);
        assertThat(clientSide.messages).hasSize(2);
    }

    @Test
    void shouldSendTheCallsAClientStartsWhileDeliveringABatchTogether()
    {
        final List<Answers> answers = new ArrayList<>();
        final List<Answers> next = new ArrayList<>();
        for (int i = 0; i < CALLS; i++)
        {
            final Answers a = unary("a" + i);
            final int n = i;
            a.onClose = () -> next.add(unary("b" + n)); // as a load generator keeps its calls outstanding
            answers.add(a);
        }
        deliverToServer(0, CALLS);
        final int sentBefore = clientSide.messages.size();
        // the answers, one transport message each, in one read batch of the client
        final List<byte[]> oneByOne = new ArrayList<>();
        for (final byte[] message : serverSide.messages)
        {
            oneByOne.add(message);
        }
        final int firstNew = clientSide.messages.size();
        for (int i = 0; i < oneByOne.size(); i++)
        {
            client.onMessage(clientSide, ByteBuffer.wrap(oneByOne.get(i)));
        }
        assertThat(next).hasSize(CALLS);
        client.onReadComplete(clientSide);
        assertThat(countFrames(clientSide.messages.subList(firstNew, clientSide.messages.size()), FrameType.CALL))
            .isEqualTo(CALLS);
        assertThat(clientSide.messages.size() - sentBefore)
            .as("20 new calls: the one started as the first answer ended leaves at once, the rest together")
            .isLessThanOrEqualTo(2);

        // and the server reads them in stream-id order, answering each
        final int served = serverSide.messages.size();
        deliverToServer(firstNew, clientSide.messages.size());
        deliverToClient(served, serverSide.messages.size());
        for (int i = 0; i < CALLS; i++)
        {
            assertThat(next.get(i).messages).containsExactly("b" + i);
        }
    }

    @Test
    void shouldWriteCorkedFramesBeforeAnotherThreadsFrame() throws Exception
    {
        final Answers a = unary("a");
        final Answers b = unary("b");
        final List<Answers> later = new ArrayList<>();
        b.onClose = () -> later.add(unary("d")); // started while delivering the batch's second message: corked
        final TransportClientStream<Int32Value> c = new TransportClientStream<>(host, TestService.NEVER,
            CallOptions.DEFAULT, OutboundCompression.NONE, new Answers());
        c.start(client);
        c.request(1);
        c.writeMessage(Int32Value.of(1));
        c.halfClose();
        for (int i = 0; i < 2; i++)
        {
            deliverToServer(i, i + 1); // one batch each: two answers, one transport message each
        }
        assertThat(serverSide.messages).hasSize(2);

        final int sent = clientSide.messages.size();
        client.onMessage(clientSide, ByteBuffer.wrap(serverSide.messages.get(0)));
        client.onMessage(clientSide, ByteBuffer.wrap(serverSide.messages.get(1)));
        assertThat(later).hasSize(1);
        assertThat(client.corked()).isTrue();
        assertThat(clientSide.messages).as("d's CALL waits in the cork").hasSize(sent);
        // another thread cancels c meanwhile: what was corked leaves first, then its CANCEL
        final Thread other = new Thread(() -> c.cancel(Status.CANCELLED));
        other.start();
        other.join();
        client.onReadComplete(clientSide);
        final List<FrameType> order = new ArrayList<>();
        for (final byte[] message : clientSide.messages.subList(sent, clientSide.messages.size()))
        {
            order.addAll(frameTypes(message));
        }
        assertThat(order).containsExactly(FrameType.CALL, FrameType.MESSAGE, FrameType.CANCEL);
        assertThat(a.closes).containsExactly(StatusCode.OK);
    }

    // ---------------------------------------------------------------- harness

    private Answers unary(final String text)
    {
        final Answers answers = new Answers();
        final TransportClientStream<StringValue> stream = new TransportClientStream<>(host, TestService.ECHO,
            CallOptions.DEFAULT, OutboundCompression.NONE, answers);
        stream.start(client);
        final ClientStream<StringValue> call = stream;
        call.request(1);
        call.writeMessage(StringValue.of(text));
        call.halfClose();
        return answers;
    }

    private void deliverToServer(final int from, final int to)
    {
        for (int i = from; i < to; i++)
        {
            serverConnection.onMessage(serverSide, ByteBuffer.wrap(clientSide.messages.get(i)));
        }
        serverConnection.onReadComplete(serverSide);
    }

    private void deliverToClient(final int from, final int to)
    {
        for (int i = from; i < to; i++)
        {
            client.onMessage(clientSide, ByteBuffer.wrap(serverSide.messages.get(i)));
        }
        client.onReadComplete(clientSide);
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

    /** What one call's stream reported. */
    private static final class Answers implements ClientStreamListener
    {
        final List<String> messages = new ArrayList<>();
        final List<StatusCode> closes = new ArrayList<>();
        final AtomicInteger readies = new AtomicInteger();
        Runnable onClose = () -> { };

        @Override
        public void headersRead(final Metadata headers)
        {
        }

        @Override
        public void messageRead(final ByteBuffer message)
        {
            try
            {
                messages.add(StringValue.parseFrom(message).getValue());
            }
            catch (final InvalidProtocolBufferException e)
            {
                throw new AssertionError(e);
            }
        }

        @Override
        public void onReady()
        {
            readies.incrementAndGet();
        }

        @Override
        public void closed(final Status status, final Metadata trailers)
        {
            closes.add(status.code());
            onClose.run();
        }
    }
}
