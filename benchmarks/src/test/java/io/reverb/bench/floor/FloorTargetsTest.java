package io.reverb.bench.floor;

import com.google.protobuf.BytesValue;
import io.reverb.bench.BenchOptions;
import io.reverb.bench.EchoService;
import io.reverb.bench.target.BenchServer;
import io.reverb.bench.target.CallObserver;
import io.reverb.bench.target.EchoClient;
import io.reverb.bench.target.Target;
import io.reverb.bench.target.TargetSettings;
import io.reverb.bench.target.Targets;
import org.junit.jupiter.api.Test;

import java.net.Socket;
import java.net.SocketException;
import java.net.URI;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The floor targets echo through the load generator's interface: every call of every lane completes once, OK, with
 * the reply routed to its own lane; a lost server fails calls instead of hanging them. Counted, not timed.
 */
class FloorTargetsTest
{

    /** One lane's chained calls, the next issued from the completion of the previous one (as the load generator). */
    private static final class Chain implements CallObserver
    {
        final AtomicInteger messages = new AtomicInteger();
        final AtomicInteger ok = new AtomicInteger();
        final AtomicLong failures = new AtomicLong();
        volatile Throwable error;
        final CountDownLatch done = new CountDownLatch(1);
        final BytesValue request;
        final int calls;
        EchoClient.Caller caller;

        Chain(final BytesValue request, final int calls)
        {
            this.request = request;
            this.calls = calls;
        }

        @Override
        public void onMessage()
        {
            messages.incrementAndGet();
        }

        @Override
        public void onClose(final int statusCode, final Throwable error)
        {
            if (statusCode != 0)
            {
                this.error = error;
                failures.incrementAndGet();
                done.countDown();
                return;
            }
            if (ok.incrementAndGet() < calls)
            {
                caller.echo(request);
            }
            else
            {
                done.countDown();
            }
        }
    }

    private static String unique(final String scheme)
    {
        return scheme + "://floortest-" + ProcessHandle.current().pid() + "-" + System.nanoTime();
    }

    private static void echoOnLanes(
        final String scheme, final String polling, final int lanes, final int payload, final int calls)
        throws Exception
    {
        echoOnLanes(URI.create(unique(scheme)), polling, lanes, payload, calls);
    }

    private static void echoOnLanes(
        final URI uri, final String polling, final int lanes, final int payload, final int calls)
        throws Exception
    {
        final Target target = Targets.forUri(uri);
        assertThat(target.framework()).isEqualTo(FloorTargets.FRAMEWORK);
        final TargetSettings settings = new TargetSettings(polling);
        try (BenchServer server = target.startServer(uri, settings);
            EchoClient client = target.connect(URI.create(server.uri()), settings))
        {
            // every reply's bytes are compared with its request's: a wrong echo fails its call (with readReplies=true,
            // the lane's copy of them is compared: a copy that misses a byte fails it)
            final FloorClient floorClient = (FloorClient)client;
            floorClient.checkBytes = true;
            assertThat(floorClient.readReplies).as("reads replies").isEqualTo(FloorTargets.readsReplies(uri));
            final List<Chain> chains = new ArrayList<>();
            for (int i = 0; i < lanes; i++)
            {
                // A payload per lane of a different size: a reply routed to the wrong lane would not match its length.
                final Chain chain = new Chain(EchoService.payload(payload + i), calls);
                chain.caller = client.newCaller(chain);
                chains.add(chain);
            }
            for (final Chain chain : chains)
            {
                chain.caller.echo(chain.request);
            }
            for (final Chain chain : chains)
            {
                assertThat(chain.done.await(60, TimeUnit.SECONDS)).as("lane finished").isTrue();
                assertThat(chain.failures.get()).as("failed calls (%s)", chain.error).isZero();
                assertThat(chain.ok.get()).isEqualTo(calls);
                assertThat(chain.messages.get()).isEqualTo(calls);
                final FloorClient.Lane lane = (FloorClient.Lane)chain.caller;
                assertThat(lane.received.length).as("bytes kept of the last reply")
                    .isEqualTo(floorClient.readReplies ? chain.request.getValue().size() : 0);
            }
            assertThat(client.blockingEcho(EchoService.payload(100))).isEqualTo(EchoService.payload(100));
            assertThatThrownBy(() -> client.blockingStream(EchoService.payload(8)))
                .isInstanceOf(UnsupportedOperationException.class).hasMessageContaining("unary");
        }
    }

    @Test
    void engineFloorEchoesEveryCallOfEveryLaneOnce() throws Exception
    {
        echoOnLanes(EngineFloorTarget.SCHEME, null, 4, 64, 2_000);
    }

    @Test
    void engineFloorEchoesInBusyModeAndLargeMessagesByRendezvous() throws Exception
    {
        echoOnLanes(EngineFloorTarget.SCHEME, "BUSY", 1, 64, 500);
        echoOnLanes(EngineFloorTarget.SCHEME, "EVENT", 3, 256 * 1024, 50);
    }

    @Test
    void floorsReadingRepliesCopyEveryReplyIntoItsLaneAndSayItInTheirLabel() throws Exception
    {
        final URI rings = URI.create(FloorTargets.expand(EngineFloorTarget.SCHEME + "?" + FloorTargets.READ_REPLIES));
        assertThat(rings.getHost()).startsWith("reverb-floor-");
        assertThat(Targets.label(rings)).isEqualTo("floor engine rings reading replies");
        echoOnLanes(rings, "BUSY", 2, 64, 300);
        echoOnLanes(rings, null, 2, 1 << 20, 10);
        final URI aeron = URI.create(FloorTargets.expand(AeronFloorTarget.SCHEME + "?" + FloorTargets.READ_REPLIES));
        assertThat(Targets.label(aeron)).isEqualTo("floor aeron ipc reading replies");
        echoOnLanes(aeron, "BUSY", 2, 5_000, 100);
        final URI tcp = URI.create(FloorTargets.expand(TcpFloorTarget.SCHEME + "?" + FloorTargets.READ_REPLIES));
        assertThat(tcp.toString()).isEqualTo("floor+tcp://127.0.0.1:0?" + FloorTargets.READ_REPLIES);
        echoOnLanes(tcp, null, 2, 1 << 20, 5);
        // the default reads a reply's lane number only
        assertThat(Targets.label(URI.create(FloorTargets.expand(EngineFloorTarget.SCHEME)))).isEqualTo("floor engine rings");
        assertThatThrownBy(() -> Targets.label(URI.create("floor://x?readReply=true")))
            .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("readReplies=true|false");
    }

    @Test
    void aeronFloorEchoesEveryCallOfEveryLaneOnce() throws Exception
    {
        echoOnLanes(AeronFloorTarget.SCHEME, "ADAPTIVE", 4, 64, 2_000);
    }

    @Test
    void aeronFloorEchoesMessagesLongerThanAFrameAndThanAFourMiBTermCarries() throws Exception
    {
        // 5,000 B: fragmented by Aeron (1,376 B frames on IPC); 1 MiB: longer than 4 MiB terms carry (512 KiB)
        echoOnLanes(AeronFloorTarget.SCHEME, "ADAPTIVE", 2, 5_000, 100);
        echoOnLanes(AeronFloorTarget.SCHEME, "BUSY", 2, 1 << 20, 10);
    }

    @Test
    void aeronFloorRefusesAPayloadItCannotCarryWithoutCountingACall() throws Exception
    {
        final URI uri = URI.create(unique(AeronFloorTarget.SCHEME));
        final Target target = Targets.forUri(uri);
        try (BenchServer server = target.startServer(uri, TargetSettings.DEFAULTS);
            EchoClient client = target.connect(URI.create(server.uri()), TargetSettings.DEFAULTS))
        {
            final Chain chain = new Chain(EchoService.payload(AeronFloorTarget.MAX_PAYLOAD + 1), 1);
            chain.caller = client.newCaller(chain);
            assertThatThrownBy(() -> chain.caller.echo(chain.request))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("floor+aeron carries at most " + AeronFloorTarget.MAX_PAYLOAD + " payload bytes");
            // refused again, not sent: no call completed, failed or counted
            assertThatThrownBy(() -> chain.caller.echo(chain.request)).isInstanceOf(IllegalArgumentException.class);
            assertThat(chain.messages.get()).isZero();
            assertThat(chain.ok.get()).isZero();
            assertThat(chain.failures.get()).isZero();
            // the longest payload it carries goes through, bytes checked
            ((FloorClient)client).checkBytes = true;
            final BytesValue longest = EchoService.payload(AeronFloorTarget.MAX_PAYLOAD);
            final Chain ok = new Chain(longest, 2);
            ok.caller = client.newCaller(ok);
            ok.caller.echo(longest);
            assertThat(ok.done.await(60, TimeUnit.SECONDS)).isTrue();
            assertThat(ok.failures.get()).as("failed calls (%s)", ok.error).isZero();
            assertThat(ok.ok.get()).isEqualTo(2);
        }
    }

    @Test
    void tcpFloorEchoesSmallAndLargeMessagesOnEveryLane() throws Exception
    {
        final URI loopback = URI.create(FloorTargets.expand(TcpFloorTarget.SCHEME));
        assertThat(loopback.toString()).isEqualTo("floor+tcp://127.0.0.1:0");
        assertThat(Targets.label(loopback)).isEqualTo("floor tcp");
        echoOnLanes(loopback, null, 4, 64, 500);
        echoOnLanes(loopback, "BUSY", 2, 64, 200);
        echoOnLanes(loopback, "ADAPTIVE", 3, 1 << 20, 10);
        echoOnLanes(loopback, "BUSY", 2, 1 << 20, 5);
    }

    @Test
    void tcpFloorRefusesAPayloadItCannotCarryAndEndsCallsWithItsServer() throws Exception
    {
        final Target target = Targets.forUri(URI.create(TcpFloorTarget.LOOPBACK));
        final BenchServer server = target.startServer(URI.create(TcpFloorTarget.LOOPBACK), TargetSettings.DEFAULTS);
        assertThat(URI.create(server.uri()).getPort()).isPositive();
        try (EchoClient client = target.connect(URI.create(server.uri()), TargetSettings.DEFAULTS))
        {
            final Chain refused = new Chain(EchoService.payload(TcpFloorTarget.MAX_PAYLOAD + 1), 1);
            refused.caller = client.newCaller(refused);
            assertThatThrownBy(() -> refused.caller.echo(refused.request))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("floor+tcp carries at most " + TcpFloorTarget.MAX_PAYLOAD + " payload bytes");
            assertThat(refused.ok.get() + refused.failures.get() + refused.messages.get()).isZero();
            assertThat(client.blockingEcho(EchoService.payload(64))).isNotNull();
            server.close();
            // the connection went with the server: calls end UNAVAILABLE, none hangs
            final Chain chain = new Chain(EchoService.payload(64), Integer.MAX_VALUE);
            chain.caller = client.newCaller(chain);
            chain.caller.echo(chain.request);
            assertThat(chain.done.await(60, TimeUnit.SECONDS)).as("a call failed").isTrue();
            assertThat(chain.failures.get()).isEqualTo(1);
        }
        assertThatThrownBy(() -> target.connect(URI.create("floor+tcp://127.0.0.1"), TargetSettings.DEFAULTS))
            .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("needs a host and a port");
    }

    @Test
    void tcpFloorServerEndsAConnectionWhoseFrameAnnouncesTooMuch() throws Exception
    {
        final Target target = Targets.forUri(URI.create(TcpFloorTarget.LOOPBACK));
        try (BenchServer server = target.startServer(URI.create(TcpFloorTarget.LOOPBACK), TargetSettings.DEFAULTS);
            Socket peer = new Socket("127.0.0.1", URI.create(server.uri()).getPort()))
        {
            peer.setSoTimeout(30_000); // a server that kept the connection fails the test instead of hanging it
            // a length past the longest frame: the server reads nothing more and closes, allocating nothing for it
            peer.getOutputStream().write(ByteBuffer.allocate(8).order(ByteOrder.nativeOrder())
                .putInt(Integer.MAX_VALUE).putInt(0).array());
            int read;
            try
            {
                read = peer.getInputStream().read();
            }
            catch (final SocketException reset)
            {
                read = -1; // closed with our unread bytes: reset rather than ended
            }
            assertThat(read).as("the server ended the connection").isEqualTo(-1);
        }
    }

    @Test
    void blockingCallsReuseTheirLanes() throws Exception
    {
        // idle-cpu makes 10,000 blocking calls: more than a client has lanes, so a blocking call's lane is reused
        for (final String scheme : List.of(EngineFloorTarget.SCHEME, AeronFloorTarget.SCHEME, TcpFloorTarget.SCHEME))
        {
            final URI uri = URI.create(TcpFloorTarget.SCHEME.equals(scheme) ? TcpFloorTarget.LOOPBACK : unique(scheme));
            final Target target = Targets.forUri(uri);
            try (BenchServer server = target.startServer(uri, TargetSettings.DEFAULTS);
                EchoClient client = target.connect(URI.create(server.uri()), TargetSettings.DEFAULTS))
            {
                final BytesValue request = EchoService.payload(64);
                int answered = 0;
                for (int i = 0; i <= FloorTargets.MAX_LANES; i++)
                {
                    answered += client.blockingEcho(request) == request ? 1 : 0;
                }
                assertThat(answered).isEqualTo(FloorTargets.MAX_LANES + 1);
            }
        }
    }

    @Test
    void engineFloorFailsCallsWhenItsServerIsGone() throws Exception
    {
        final URI uri = URI.create(unique(EngineFloorTarget.SCHEME));
        final Target target = Targets.forUri(uri);
        final BenchServer server = target.startServer(uri, TargetSettings.DEFAULTS);
        try (EchoClient client = target.connect(URI.create(server.uri()), TargetSettings.DEFAULTS))
        {
            assertThat(client.blockingEcho(EchoService.payload(64))).isNotNull();
            server.close();
            // Calls after the server went: each ends with UNAVAILABLE (at the send, or when the connection's loss
            // is noticed), none hangs.
            final Chain chain = new Chain(EchoService.payload(64), Integer.MAX_VALUE);
            chain.caller = client.newCaller(chain);
            chain.caller.echo(chain.request);
            assertThat(chain.done.await(60, TimeUnit.SECONDS)).as("a call failed").isTrue();
            assertThat(chain.failures.get()).isEqualTo(1);
        }
    }

    @Test
    void aeronFloorFailsCallsWhenItsServerIsGone() throws Exception
    {
        final URI uri = URI.create(unique(AeronFloorTarget.SCHEME));
        final Target target = new AeronFloorTarget(2_000);
        final BenchServer server = target.startServer(uri, TargetSettings.DEFAULTS);
        try (EchoClient client = target.connect(URI.create(server.uri()), TargetSettings.DEFAULTS))
        {
            assertThat(client.blockingEcho(EchoService.payload(64))).isNotNull();
            server.close();
            // the media driver went with the server: the client's calls end UNAVAILABLE once it notices, none hangs
            final Chain chain = new Chain(EchoService.payload(64), Integer.MAX_VALUE);
            chain.caller = client.newCaller(chain);
            chain.caller.echo(chain.request);
            assertThat(chain.done.await(60, TimeUnit.SECONDS)).as("a call failed").isTrue();
            assertThat(chain.failures.get()).isEqualTo(1);
        }
    }

    @Test
    void bareFloorOnTheCommandLineBecomesANamedAddress()
    {
        final BenchOptions options =
            BenchOptions.parse(new String[] {"--compare", "shm://x,floor,floor+aeron,floor+tcp,floor+tcp://10.0.0.1:7404"});

        assertThat(options.uris).hasSize(5);
        assertThat(options.uris.get(3)).isEqualTo("floor+tcp://127.0.0.1:0");
        assertThat(options.uris.get(4)).isEqualTo("floor+tcp://10.0.0.1:7404");
        assertThat(Targets.forUri(URI.create(options.uris.get(4))).framework()).isEqualTo(FloorTargets.FRAMEWORK);
        assertThat(options.uris.get(0)).isEqualTo("shm://x");
        assertThat(options.uris.get(1)).startsWith("floor://reverb-floor-");
        assertThat(options.uris.get(2)).startsWith("floor+aeron://reverb-floor-");
        assertThat(FloorTargets.isFloor(URI.create(options.uris.get(1)))).isTrue();
        assertThat(Targets.label(URI.create(options.uris.get(2)))).isEqualTo("floor aeron ipc");
        assertThatThrownBy(() -> Targets.forUri(URI.create("floor:///")).startServer(URI.create("floor:///"),
            TargetSettings.DEFAULTS)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("needs a name");
    }
}
