package io.reverb.rpc.internal;

import static io.reverb.rpc.internal.RecordingConnection.frameTypes;
import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.StringValue;
import io.reverb.common.WriteClaim;
import io.reverb.rpc.Deadline;
import io.reverb.rpc.RpcServer;
import io.reverb.rpc.Status;
import io.reverb.rpc.TestService;
import io.reverb.rpc.wire.FrameType;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A server connection that drains (GOAWAY) closes once its last call ends, but never before the GOAWAY is written:
 * a call ending on another thread while the GOAWAY is on its way must not close the connection under it. Before, the
 * close could win, the GOAWAY was dropped, and the client failed every call it had sent meanwhile as lost with the
 * connection (UNAVAILABLE "connection closed") instead of resending them (found by the graceful-replacement test over
 * tcp, 1 run in 3). Driven by hand with two threads: the GOAWAY's thread is held between marking the connection
 * draining and writing the GOAWAY while the last call ends.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class DrainCloseOrderTest
{
    private final RecordingConnection clientSide = new RecordingConnection(false);
    private final TestService service = new TestService();
    private final ClientTransportImpl channel = TestRuntimes.channel();
    private final ServerRuntime server = TestRuntimes.server(service);
    private final ClientWireConnection client = new ClientWireConnection(channel, RpcServer.DEFAULT_MAX_INBOUND_MESSAGE_SIZE,
        ClientWireConnection.LAST_STREAM_ID);

    DrainCloseOrderTest()
    {
        client.attach(clientSide);
    }

    @AfterEach
    void tearDown()
    {
        client.closeWithError(Status.UNAVAILABLE);
    }

    /** The server's transport: records what it sends and when it is closed. */
    private static final class OrderedConnection extends RecordingConnection
    {
        private final List<String> events = new ArrayList<>();

        @Override
        public int commit(final WriteClaim claim)
        {
            final int result = super.commit(claim);
            synchronized (events)
            {
                events.add(frameTypes(messages.get(messages.size() - 1)).toString());
            }
            return result;
        }

        @Override
        public void close()
        {
            synchronized (events)
            {
                events.add("close");
            }
        }

        List<String> events()
        {
            synchronized (events)
            {
                return new ArrayList<>(events);
            }
        }
    }

    @Test
    void theLastCallEndingWhileTheGoAwayIsWrittenClosesTheConnectionAfterIt() throws Exception
    {
        final OrderedConnection serverSide = new OrderedConnection();
        final ServerWireConnection connection = new ServerWireConnection(server, serverSide);
        final UnaryClientCall<StringValue, StringValue> call = new UnaryClientCall<>(channel, TestService.ECHO,
            StringValue.of("sleep"), null, null, Deadline.after(Duration.ofMinutes(5)), false);
        call.actual = new Recorder<>();
        call.request(Long.MAX_VALUE);
        call.onConnection(client);
        read(connection, serverSide, new ArrayList<>(clientSide.messages)); // CALL + MESSAGE: the handler runs on
        assertThat(connection.streams.size()).as("calls running").isEqualTo(1);
        clientSide.messages.clear();
        call.cancel();
        final List<byte[]> cancel = new ArrayList<>(clientSide.messages);
        assertThat(cancel).hasSize(1);
        assertThat(frameTypes(cancel.get(0))).containsExactly(FrameType.CANCEL);

        // the GOAWAY's thread stops after marking the connection draining, before writing the GOAWAY
        final CountDownLatch held = new CountDownLatch(1);
        final CountDownLatch release = new CountDownLatch(1);
        connection.beforeGoAwayWrite = () ->
        {
            held.countDown();
            try
            {
                release.await(30, TimeUnit.SECONDS);
            }
            catch (final InterruptedException e)
            {
                Thread.currentThread().interrupt();
            }
        };
        final Thread goAway = new Thread(connection::goAway, "drain-goaway");
        goAway.start();
        assertThat(held.await(30, TimeUnit.SECONDS)).as("the GOAWAY is about to be written").isTrue();
        // the client's CANCEL ends the last call on another thread in that instant
        final Thread ender = new Thread(() -> read(connection, serverSide, cancel), "drain-last-call-ends");
        ender.start();
        awaitBlockedOrDone(ender);
        release.countDown();
        goAway.join(TimeUnit.SECONDS.toMillis(30));
        ender.join(TimeUnit.SECONDS.toMillis(30));
        assertThat(goAway.isAlive() || ender.isAlive()).as("both threads done").isFalse();

        final List<String> events = serverSide.events();
        assertThat(events).as("what the server's transport saw, in order").contains("[GOAWAY]", "close");
        assertThat(events.indexOf("close")).as("closed after the GOAWAY was written: " + events)
            .isGreaterThan(events.indexOf("[GOAWAY]"));
        assertThat(connection.streams.isEmpty()).isTrue();
    }

    /** Waits until the thread has ended, or waits for a lock (its work cannot go on before the GOAWAY is written). */
    private static void awaitBlockedOrDone(final Thread thread) throws InterruptedException
    {
        final long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (thread.isAlive() && thread.getState() != Thread.State.BLOCKED && System.nanoTime() - until < 0)
        {
            Thread.sleep(1);
        }
    }

    private static void read(final ServerWireConnection connection, final RecordingConnection transport,
        final List<byte[]> batch)
    {
        for (final byte[] message : batch)
        {
            connection.onMessage(transport, ByteBuffer.wrap(message));
        }
    }
}
