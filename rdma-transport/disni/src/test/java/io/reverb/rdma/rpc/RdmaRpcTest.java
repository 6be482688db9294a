package io.reverb.rdma.rpc;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.BytesValue;
import com.google.protobuf.Int32Value;
import io.reverb.rdma.provider.disni.RdmaTestDevice;
import io.reverb.rdma.verbs.TestScale;
import io.reverb.rpc.AbstractRpcTransportTest;
import io.reverb.rpc.CallOptions;
import io.reverb.rpc.Status;
import io.reverb.rpc.TestService;
import io.reverb.rpc.stub.ClientCalls;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * rpc-core's call suite over {@code rdma://} (the connection engine over DiSNi) on this host's RDMA device, or on
 * the emulated one ({@link RdmaTestDevice}); skipped with the reason where neither is there. The suite's unary
 * load cell (128 calls outstanding, issued from completions) runs as part of it; the server-streaming cell is
 * {@link #shouldCompleteEveryStreamWith128OutstandingServerStreamingCalls()}.
 */
class RdmaRpcTest extends AbstractRpcTransportTest
{
    /** Over a real device on a slow host (TestScale: a VM under emulation), fewer rounds. */
    @Override
    protected int scaledRounds(final int count)
    {
        return TestScale.rounds(count);
    }

    /** Over a real device on a slow host (TestScale), longer limits. */
    @Override
    protected Duration scaledLimit(final Duration limit)
    {
        return Duration.ofNanos(TestScale.nanos(limit.toNanos()));
    }

    @Override
    protected String newServerUri()
    {
        final String cause = RdmaTestDevice.unavailabilityCause();
        Assumptions.assumeTrue(cause == null, cause);
        final String host = System.getProperty("reverb.disni.localAddress", RdmaTestDevice.EMULATED_HOST);
        // The suite connects to the URI it listens on, so it needs a concrete port (the handshake's TCP port).
        try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getByName(host)))
        {
            return "rdma://" + host + ":" + socket.getLocalPort();
        }
        catch (final IOException ex)
        {
            throw new UncheckedIOException(ex);
        }
    }

    @Override
    protected boolean killServerConnections(final String serverUri)
    {
        return EngineTransportTestHooks.killServerConnections(serverUri) > 0;
    }

    @Override
    protected boolean freezeServer(final String serverUri, final boolean frozen)
    {
        EngineTransportTestHooks.freezeServer(serverUri, frozen);
        return true;
    }

    @Override
    protected boolean freezeClients(final String serverUri, final boolean frozen)
    {
        return EngineTransportTestHooks.freezeClients(serverUri, frozen) > 0;
    }

    /**
     * The load-matrix cell "rdma, server-streaming, c=128": 128 closed-loop lanes, each issuing its next stream
     * when the previous one completes, 2,000 streams of 10 messages of about 1 KiB. Counted: every stream
     * complete with all its messages, no failure; the suite then checks that no buffer is held.
     */
    @Test
    void shouldCompleteEveryStreamWith128OutstandingServerStreamingCalls() throws Exception
    {
        final int lanes = 128;
        final int total = 2_000;
        final int perStream = 10;
        final AtomicInteger issued = new AtomicInteger();
        final AtomicInteger ok = new AtomicInteger();
        final AtomicLong messages = new AtomicLong();
        final ConcurrentHashMap<String, Integer> failures = new ConcurrentHashMap<>();
        final CountDownLatch done = new CountDownLatch(lanes);
        final Int32Value request = Int32Value.of(perStream);
        // Each next stream is issued off the transport's thread (a stream failing inside subscribe() must not recurse).
        final ExecutorService executor = Executors.newFixedThreadPool(2);
        final Runnable[] next = new Runnable[1];
        next[0] = () ->
        {
            if (issued.incrementAndGet() > total)
            {
                done.countDown();
                return;
            }
            final AtomicInteger received = new AtomicInteger();
            // a deadline per stream, from its start (one made once would be a moment in time shared by all 2,000)
            final CallOptions options = CallOptions.DEFAULT.withDeadlineAfter(Duration.ofSeconds(30));
            ClientCalls.serverStreaming(channel, TestService.RANGE, options, request).subscribe(
                (BytesValue value) ->
                {
                    received.incrementAndGet();
                    messages.incrementAndGet();
                },
                error ->
                {
                    failures.merge(Status.fromThrowable(error).code() + ": " + error.getMessage(), 1, Integer::sum);
                    executor.execute(next[0]);
                },
                () ->
                {
                    if (received.get() == perStream)
                    {
                        ok.incrementAndGet();
                    }
                    else
                    {
                        failures.merge("stream of " + received.get() + " messages", 1, Integer::sum);
                    }
                    executor.execute(next[0]);
                });
        };
        for (int i = 0; i < lanes; i++)
        {
            next[0].run();
        }
        try
        {
            assertThat(done.await(120, TimeUnit.SECONDS)).as("all lanes finished, " + ok.get() + " OK so far").isTrue();
        }
        finally
        {
            executor.shutdown();
        }
        assertThat(failures).isEmpty();
        assertThat(ok.get()).isEqualTo(total);
        assertThat(messages.get()).isEqualTo((long)total * perStream);
    }
}
