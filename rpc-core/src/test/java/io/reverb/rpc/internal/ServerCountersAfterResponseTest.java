package io.reverb.rpc.internal;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.StringValue;
import io.reverb.common.WriteClaim;
import io.reverb.rpc.RpcServer;
import io.reverb.rpc.Status;
import io.reverb.rpc.StatusCode;
import io.reverb.rpc.TestService;
import io.reverb.rpc.wire.FrameType;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * The method's counters (a locked increment into the process's counters file) are not on the response's path: a
 * handler that answers at once has its response committed before the call is counted as started, and the counts are
 * whole once the transport's callback returns. Single-threaded and counted, not timed.
 */
class ServerCountersAfterResponseTest
{
    private final ClientTransportImpl channel = TestRuntimes.channel();
    private final ServerRuntime server = TestRuntimes.server(new TestService());

    @Test
    void shouldCommitTheResponseBeforeCountingTheCallStarted()
    {
        callOnce(false);
    }

    @Test
    void shouldCommitTheResponseBeforeCountingTheCallStartedWhenStartsWaitForTheBatchEnd()
    {
        callOnce(true);
    }

    @Test
    void shouldCountACallEndedWithItsConnectionBeforeItsStartAsStartedAndFinished()
    {
        final ServerMethodCounters counters = echoCounters();
        final CountingConnection serverSide = new CountingConnection(true, counters);
        final ServerWireConnection serverConnection = new ServerWireConnection(server, serverSide);
        serverConnection.onMessage(serverSide, ByteBuffer.wrap(callAndRequest()));
        // the batch never ends: the connection is lost first, and its deferred call never starts
        serverConnection.onClose(serverSide, null);
        assertThat(serverSide.messages).as("no handler ran").isEmpty();
        assertThat(counters.started()).isEqualTo(1);
        assertThat(counters.finished(StatusCode.UNAVAILABLE.value())).as("ended as the connection closed").isEqualTo(1);
        assertThat(counters.inFlight()).isZero();
    }

    private void callOnce(final boolean batches)
    {
        final ServerMethodCounters counters = echoCounters();
        final CountingConnection serverSide = new CountingConnection(batches, counters);
        final ServerWireConnection serverConnection = new ServerWireConnection(server, serverSide);

        serverConnection.onMessage(serverSide, ByteBuffer.wrap(callAndRequest()));
        if (batches)
        {
            assertThat(serverSide.messages).as("the start waits for the batch end").isEmpty();
            serverConnection.onReadComplete(serverSide);
        }

        assertThat(serverSide.messages).hasSize(1);
        assertThat(RecordingConnection.frameTypes(serverSide.messages.get(0)))
            .containsExactly(FrameType.MESSAGE, FrameType.STATUS);
        assertThat(serverSide.startedAtCommit).as("calls counted as started when the response was committed")
            .containsExactly(0L);
        assertThat(counters.started()).isEqualTo(1);
        assertThat(counters.finished(StatusCode.OK.value())).isEqualTo(1);
        assertThat(counters.inFlight()).isZero();
    }

    private ServerMethodCounters echoCounters()
    {
        final ServerMethodCounters counters = server.counters(TestService.ECHO);
        Assumptions.assumeTrue(counters != null, "this JVM keeps no counters file (Agrona cannot run here)");
        assertThat(counters.started()).isZero();
        return counters;
    }

    /** @return the CALL and MESSAGE of one echo call, in one transport message, as a client sends them. */
    private byte[] callAndRequest()
    {
        final RecordingConnection clientSide = new RecordingConnection();
        final ClientWireConnection client = new ClientWireConnection(channel, RpcServer.DEFAULT_MAX_INBOUND_MESSAGE_SIZE,
            ClientWireConnection.LAST_STREAM_ID);
        client.attach(clientSide);
        final UnaryClientCall<StringValue, StringValue> call = new UnaryClientCall<>(channel, TestService.ECHO,
            StringValue.of("hi"), null, null, null, false);
        call.actual = new Recorder<>();
        call.request(Long.MAX_VALUE);
        try
        {
            call.onConnection(client);
            assertThat(clientSide.messages).hasSize(1);
            return clientSide.messages.get(0);
        }
        finally
        {
            client.closeWithError(Status.UNAVAILABLE);
        }
    }

    /** Notes, at each commit, how many calls the method's counters had counted as started. */
    private static final class CountingConnection extends RecordingConnection
    {
        final List<Long> startedAtCommit = new ArrayList<>();
        private final ServerMethodCounters counters;

        CountingConnection(final boolean signalsReadComplete, final ServerMethodCounters counters)
        {
            super(signalsReadComplete);
            this.counters = counters;
        }

        @Override
        public int commit(final WriteClaim claim)
        {
            startedAtCommit.add(counters.started());
            return super.commit(claim);
        }
    }
}
