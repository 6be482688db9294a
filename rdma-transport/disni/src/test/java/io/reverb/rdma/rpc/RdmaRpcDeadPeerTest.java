package io.reverb.rdma.rpc;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.Int32Value;
import com.google.protobuf.StringValue;
import io.reverb.rdma.engine.EngineConfig;
import io.reverb.rdma.provider.disni.EmulatedDeviceLeakCheck;
import io.reverb.rdma.provider.disni.RdmaTestDevice;
import io.reverb.rdma.provider.disni.emu.EmulatedFabric;
import io.reverb.rpc.CallOptions;
import io.reverb.rpc.RpcChannel;
import io.reverb.rpc.RpcException;
import io.reverb.rpc.RpcServer;
import io.reverb.rpc.StatusCode;
import io.reverb.rpc.TestService;
import io.reverb.rpc.stub.ClientCalls;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;
import reactor.core.publisher.Mono;

/**
 * A server that vanishes without a word ({@code kill -9} whose DREQ never arrives, a power cut): its QP stops
 * answering and no rdma_cm event tells the client. The real rxe run of RDMA-HARDWARE.md saw a client keep 4 calls
 * open for more than 45 s after its server was killed. Here, over the emulated device, the client's open calls must
 * fail with UNAVAILABLE once its keep-alive PING goes unanswered, and its end of the connection must give back its PD,
 * QP, rdma_cm id and registrations (the vanished side keeps its own until it is closed, as a killed process's are
 * until the kernel cleans up).
 */
@ExtendWith(EmulatedDeviceLeakCheck.class)
@Timeout(value = 120, unit = TimeUnit.SECONDS)
@Tag(RdmaTestDevice.EMULATION_ONLY_TAG)
class RdmaRpcDeadPeerTest
{
    private static final int CALLS = 4;
    /** Far beyond keep-alive (0.5 s + 2 s) and the NIC's retry budget (8 x 537 ms): the rxe run saw calls held > 45 s. */
    private static final long FAIL_WITHIN_SECONDS = 30;

    private static String newServerUri()
    {
        final String cause = RdmaTestDevice.unavailabilityCause();
        Assumptions.assumeTrue(cause == null, cause);
        Assumptions.assumeTrue(RdmaTestDevice.isEmulated(), "makes a peer vanish through the emulated device; this " +
            "host runs the rdma:// tests on a real one (bin/reverb-rdma-vm's kill9 steps test it there)");
        final String host = System.getProperty("reverb.disni.localAddress", RdmaTestDevice.EMULATED_HOST);
        try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getByName(host)))
        {
            return "rdma://" + host + ":" + socket.getLocalPort();
        }
        catch (final IOException ex)
        {
            throw new UncheckedIOException(ex);
        }
    }

    @Test
    void shouldFailTheOpenCallsToAVanishedServerWithinKeepAliveAndGiveBackTheClientsRegistrations() throws Exception
    {
        // The calls' requests were acknowledged before the server vanished: only the keep-alive PING finds it gone.
        failCallsToAVanishedServer(Duration.ofMillis(500), Duration.ofSeconds(2), false, false);
    }

    @Test
    void shouldFailTheOpenCallsToAKilledServerWhoseKernelSentADisconnect() throws Exception
    {
        // kill -9 as rdma_cm sees it when the kernel's cleanup gets its DREQ out: DISCONNECTED at the client while
        // the killed side's QP answers nothing; keep-alive at its default (30 s + 10 s) must not be what ends it.
        failCallsToAVanishedServer(Duration.ofSeconds(30), Duration.ofSeconds(10), false, true);
    }

    @Test
    void shouldFailCallsWhoseRequestsAVanishedServerNeverAcknowledgesWithoutKeepAlive() throws Exception
    {
        // Keep-alive off: the requests sent after the server vanished are retried by the NIC until its retry budget
        // runs out (IBV_WC_RETRY_EXC_ERR); that alone must fail the connection and its calls.
        failCallsToAVanishedServer(Duration.ZERO, Duration.ofSeconds(2), true, false);
    }

    private static void failCallsToAVanishedServer(final Duration keepAlive, final Duration keepAliveTimeout,
        final boolean callAfterVanishing, final boolean dreq) throws Exception
    {
        final String uri = newServerUri();
        final TestService service = new TestService();
        final Map<String, Integer> beforeServer = RdmaTestDevice.liveEmulatedObjects();
        final Map<String, Integer> beforeConnect;
        final List<CompletableFuture<Throwable>> failures = new ArrayList<>();
        try (RpcServer server = RpcServer.builder(uri).transportOptions(EngineOptions.of(config("dead-peer-server")))
            .addService(service).build().start())
        {
            beforeConnect = RdmaTestDevice.liveEmulatedObjects();
            try (RpcChannel channel = RpcChannel.builder(uri).transportOptions(EngineOptions.of(config("dead-peer-client")))
                .keepAlive(keepAlive, keepAliveTimeout).build())
            {
                assertThat(ClientCalls.unary(channel, TestService.ECHO, CallOptions.DEFAULT, StringValue.of("up"))
                    .block(Duration.ofSeconds(30)).getValue()).isEqualTo("up");
                assertThat(channel.fabric()).as("the calls go over rdma").isEqualTo("rdma");
                if (!callAfterVanishing)
                {
                    for (int i = 0; i < CALLS; i++)
                    {
                        failures.add(subscribe(ClientCalls.serverStreaming(channel, TestService.NEVER, CallOptions.DEFAULT,
                            Int32Value.of(1)).then()));
                    }
                    final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
                    while (service.callsStarted.get() < 1 + CALLS)
                    {
                        assertThat(System.nanoTime() - deadline).as("calls started at the server").isNegative();
                        Thread.sleep(2);
                    }
                }

                assertThat(EmulatedFabric.instance().vanishAcceptedSides(dreq)).as("the server's end vanished").isEqualTo(1);
                final long vanished = System.nanoTime();
                if (callAfterVanishing)
                {
                    for (int i = 0; i < CALLS; i++)
                    {
                        failures.add(subscribe(ClientCalls.unary(channel, TestService.ECHO, CallOptions.DEFAULT,
                            StringValue.of("unanswered " + i)).then()));
                    }
                }
                for (final CompletableFuture<Throwable> failure : failures)
                {
                    final Throwable t = failure.get(FAIL_WITHIN_SECONDS, TimeUnit.SECONDS);
                    assertThat(t).isInstanceOf(RpcException.class);
                    assertThat(((RpcException)t).status().code()).as("status of %s", t).isEqualTo(StatusCode.UNAVAILABLE);
                }
                System.out.printf("[rdma dead peer] %d calls failed UNAVAILABLE %d ms after the server vanished (%s)%n",
                    CALLS, TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - vanished),
                    callAfterVanishing ? "requests unacknowledged, keep-alive off" : dreq ? "DREQ" : "keep-alive");

                // The client's end gave back its PD, QP, id and registrations; only the vanished end's remain.
                final long back = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
                Map<String, Integer> live = RdmaTestDevice.liveEmulatedObjects();
                while (!clientEndGone(live, beforeConnect))
                {
                    assertThat(System.nanoTime() - back).as("the client's end gone; the device holds %s, %s before the " +
                        "connection", live, beforeConnect).isNegative();
                    Thread.sleep(10);
                    live = RdmaTestDevice.liveEmulatedObjects();
                }
                System.out.printf("[rdma dead peer] the client's end was gone %d ms after the server vanished%n",
                    TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - vanished));
            }
        }
        // Closing the server gives the vanished end's objects back too (a kernel's cleanup of a killed process).
        final long closed = System.nanoTime();
        RdmaTestDevice.assertEmulatedDeviceBackTo(beforeServer);
        System.out.printf("[rdma dead peer] the vanished end's objects were gone %d ms after its server closed%n",
            TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - closed));
    }

    /**
     * An engine of each side's own whose graceful close waits 1 s, not 10, for messages in flight: a close towards the
     * vanished end never completes, and the time it waits says nothing here (the client's calls fail before it).
     */
    private static EngineConfig config(final String name)
    {
        return new EngineConfig().name(name).closeTimeoutNanos(TimeUnit.SECONDS.toNanos(1));
    }

    private static CompletableFuture<Throwable> subscribe(final Mono<Void> call)
    {
        final CompletableFuture<Throwable> failure = new CompletableFuture<>();
        call.subscribe(v -> { }, failure::complete, () -> failure.complete(null));
        return failure;
    }

    /** The vanished (accepting) end holds a PD, a QP, an id and three MRs; the client's end nothing. */
    private static boolean clientEndGone(final Map<String, Integer> live, final Map<String, Integer> before)
    {
        return live.get("Pd") - before.get("Pd") == 1 && live.get("Qp") - before.get("Qp") == 1 &&
            live.get("CmId") - before.get("CmId") == 1 && live.get("Mr") - before.get("Mr") == 3;
    }
}
