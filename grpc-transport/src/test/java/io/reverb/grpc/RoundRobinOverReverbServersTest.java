package io.reverb.grpc;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.ByteString;
import io.grpc.ManagedChannel;
import io.grpc.Server;
import io.grpc.stub.StreamObserver;
import io.reverb.grpc.test.EchoGrpc;
import io.reverb.grpc.test.EchoReply;
import io.reverb.grpc.test.EchoRequest;
import java.util.ArrayList;
import java.net.URI;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * grpc-java's own load balancing over Reverb connections (issue 26), through the public API: one channel built by
 * {@link ReverbChannelBuilder#forAddresses} (or {@code forTarget("static:a,b,c")}) over three Reverb server
 * addresses, with {@code defaultLoadBalancingPolicy("round_robin")}, spreads its calls over all three servers, each
 * through its own grpc-java subchannel and Reverb connection, and goes on serving every call from the other two once
 * one of them is killed ({@code shutdownNow}). One case mixes schemes (inproc, shm, tcp) in one channel. Calls are
 * counted per server; nothing is timed.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class RoundRobinOverReverbServersTest
{
    private static final AtomicInteger IDS = new AtomicInteger();
    private static final int SERVERS = 3;
    private static final long WAIT_SECONDS = 30;

    private final List<Server> servers = new ArrayList<>();
    private final List<CountingEcho> services = new ArrayList<>();
    private final List<String> addresses = new ArrayList<>();
    private ManagedChannel channel;

    /** Counts the unary calls one server answered. */
    private static final class CountingEcho extends EchoGrpc.EchoImplBase
    {
        final AtomicInteger calls = new AtomicInteger();

        @Override
        public void unary(final EchoRequest request, final StreamObserver<EchoReply> responses)
        {
            calls.incrementAndGet();
            responses.onNext(EchoReply.newBuilder().setPayload(request.getPayload()).build());
            responses.onCompleted();
        }
    }

    private String newAddress(final String scheme)
    {
        switch (scheme)
        {
            case "inproc":
                return "inproc://round-robin-" + IDS.incrementAndGet();
            case "shm":
                return "shm://round-robin-" + ProcessHandle.current().pid() + "-" + IDS.incrementAndGet();
            case "tcp":
                return "tcp://127.0.0.1:0";
            default:
                throw new IllegalArgumentException(scheme);
        }
    }

    /**
     * @param schemes one scheme per server.
     * @param form    {@code list}: {@link ReverbChannelBuilder#forAddresses}; {@code static}: {@code forTarget} of
     *                {@code static:} and the comma-separated addresses.
     */
    private void start(final String[] schemes, final String form) throws Exception
    {
        for (final String scheme : schemes)
        {
            final CountingEcho service = new CountingEcho();
            final Server server = ReverbServerBuilder.forAddress(newAddress(scheme)).addService(service).build().start();
            servers.add(server);
            services.add(service);
            addresses.add(server.getListenSockets().get(0).toString()); // the bound address (tcp: its port)
        }
        final ReverbChannelBuilder builder = form.equals("list") ? ReverbChannelBuilder.forAddresses(addresses)
            : ReverbChannelBuilder.forTarget("static:" + String.join(",", addresses));
        channel = builder.defaultLoadBalancingPolicy("round_robin").build();
    }

    @AfterEach
    void tearDown() throws Exception
    {
        if (channel != null)
        {
            channel.shutdownNow();
            assertThat(channel.awaitTermination(WAIT_SECONDS, TimeUnit.SECONDS)).isTrue();
        }
        for (final Server server : servers)
        {
            server.shutdownNow();
            assertThat(server.awaitTermination(WAIT_SECONDS, TimeUnit.SECONDS)).isTrue();
        }
        for (final String address : addresses)
        {
            AbstractReverbConformanceTest.assertReleased(address);
        }
    }

    private void call()
    {
        EchoGrpc.newBlockingStub(channel).withDeadlineAfter(WAIT_SECONDS, TimeUnit.SECONDS)
            .unary(EchoRequest.newBuilder().setPayload(ByteString.copyFromUtf8("x")).build());
    }

    private int[] counts()
    {
        final int[] counts = new int[SERVERS];
        for (int i = 0; i < SERVERS; i++)
        {
            counts[i] = services.get(i).calls.get();
        }
        return counts;
    }

    private static int[] since(final int[] before, final int[] after)
    {
        final int[] delta = new int[before.length];
        for (int i = 0; i < before.length; i++)
        {
            delta[i] = after[i] - before[i];
        }
        return delta;
    }

    /**
     * One Reverb address takes a load balancing policy and a service config, as a grpc-java {@code forTarget} channel
     * does (Netty's {@code forTarget("host:port")}); Spring gRPC's channel properties set {@code round_robin} on every
     * channel it makes. It used to be a direct address, on which grpc-java refuses any policy (IllegalStateException).
     */
    @ParameterizedTest(name = "{0} {1}")
    @CsvSource({"inproc, round_robin", "shm, round_robin", "tcp, round_robin", "shm, pick_first"})
    void oneAddressTakesALoadBalancingPolicyAndKeepsItsAuthority(final String scheme, final String policy)
        throws Exception
    {
        final CountingEcho service = new CountingEcho();
        final Server server = ReverbServerBuilder.forAddress(newAddress(scheme)).addService(service).build().start();
        servers.add(server);
        final String address = server.getListenSockets().get(0).toString();
        addresses.add(address);
        channel = ReverbChannelBuilder.forTarget(address).defaultLoadBalancingPolicy(policy)
            .defaultServiceConfig(Map.of("loadBalancingConfig", List.of(Map.of(policy,
                Map.of())))).build();
        assertThat(channel.authority()).isEqualTo(URI.create(address).getAuthority());
        for (int i = 0; i < 5; i++)
        {
            call();
        }
        assertThat(service.calls).hasValue(5);
    }

    @ParameterizedTest(name = "{0} {1}")
    @CsvSource({"inproc inproc inproc, list", "shm shm shm, list", "tcp tcp tcp, list", "tcp tcp tcp, static",
        "inproc shm tcp, list", "shm tcp inproc, static"})
    void roundRobinSpreadsCallsOverThreeServersAndSurvivesOneKilled(final String schemes, final String form)
        throws Exception
    {
        start(schemes.split(" "), form);
        assertThat(servers).hasSize(SERVERS);

        // warm-up: round_robin picks among the subchannels already READY, so calls go on until all three answered
        int warmUp = 0;
        // bounded by time, not by calls: round_robin sends every call to the READY servers, so a fast one (inproc)
        // answers thousands while a slower one still connects on a loaded machine
        final long warmUpEnd = System.nanoTime() + TimeUnit.SECONDS.toNanos(WAIT_SECONDS);
        while (services.stream().anyMatch(s -> s.calls.get() == 0))
        {
            assertThat(System.nanoTime() - warmUpEnd).as("every server answered within %d s (%d calls)", WAIT_SECONDS,
                warmUp).isNegative();
            warmUp++;
            call();
        }

        // all three READY: sequential calls rotate over them, the same number each
        final int[] beforeSpread = counts();
        for (int i = 0; i < SERVERS * 10; i++)
        {
            call();
        }
        assertThat(since(beforeSpread, counts())).as("30 calls over three READY servers").containsExactly(10, 10, 10);

        // kill the middle one: every later call succeeds, served by the other two
        servers.get(1).shutdownNow();
        assertThat(servers.get(1).awaitTermination(WAIT_SECONDS, TimeUnit.SECONDS)).isTrue();
        final int[] beforeKill = counts();
        for (int i = 0; i < 60; i++)
        {
            call(); // throws (and fails the test) if a call fails
        }
        final int[] afterKill = since(beforeKill, counts());
        assertThat(afterKill[1]).as("the killed server answers nothing").isZero();
        assertThat(afterKill[0] + afterKill[2]).isEqualTo(60);
        assertThat(afterKill[0]).as("the first survivor still gets calls").isPositive();
        assertThat(afterKill[2]).as("the third survivor still gets calls").isPositive();
    }
}
