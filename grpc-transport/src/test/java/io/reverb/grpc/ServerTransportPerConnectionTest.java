package io.reverb.grpc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.protobuf.ByteString;
import io.grpc.Attributes;
import io.grpc.Grpc;
import io.grpc.InternalChannelz;
import io.grpc.InternalInstrumented;
import io.grpc.InternalWithLogId;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.Server;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.ServerInterceptors;
import io.grpc.ServerTransportFilter;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.reverb.grpc.test.EchoGrpc;
import io.reverb.grpc.test.EchoRequest;
import io.reverb.rpc.RpcServer;
import java.net.SocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * grpc-java's server over Reverb sees one transport per Reverb connection, as over Netty: a
 * {@link ServerTransportFilter} is told transportReady once per connection (each grpc-java channel to the server is
 * one), with the connection's remote address; what it adds to the attributes reaches the calls of that connection
 * alone ({@code ServerCall.getAttributes()}); closing one channel ends its transport alone (transportTerminated), and
 * the server's shutdown and shutdownNow end every transport. Counts only, no timing.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class ServerTransportPerConnectionTest
{
    private static final AtomicInteger IDS = new AtomicInteger();
    private static final Attributes.Key<Integer> CONNECTION = Attributes.Key.create("test-connection-number");
    private static final long WAIT_SECONDS = 30;

    private final List<ManagedChannel> channels = new ArrayList<>();
    private final RecordingFilter filter = new RecordingFilter();
    /** The connection number the last call's ServerCall.getAttributes() carried. */
    private final AtomicReference<Integer> lastCallConnection = new AtomicReference<>();
    private final GrpcEchoService service = new GrpcEchoService();
    private Server server;
    private String address;

    /** Numbers each transport in transportReady and records its end. */
    private static final class RecordingFilter extends ServerTransportFilter
    {
        final AtomicInteger ready = new AtomicInteger();
        final Set<SocketAddress> remotes = ConcurrentHashMap.newKeySet();
        /** Connection number -> how many times transportTerminated was told of it. */
        final Map<Integer, AtomicInteger> terminated = new ConcurrentHashMap<>();
        final Map<Integer, CountDownLatch> terminatedLatch = new ConcurrentHashMap<>();

        @Override
        public Attributes transportReady(final Attributes attributes)
        {
            final int number = ready.incrementAndGet();
            remotes.add(attributes.get(Grpc.TRANSPORT_ATTR_REMOTE_ADDR));
            terminatedLatch.put(number, new CountDownLatch(1));
            return attributes.toBuilder().set(CONNECTION, number).build();
        }

        @Override
        public void transportTerminated(final Attributes attributes)
        {
            final Integer number = attributes.get(CONNECTION);
            terminated.computeIfAbsent(number, n -> new AtomicInteger()).incrementAndGet();
            terminatedLatch.get(number).countDown();
        }

        boolean awaitTerminated(final int number) throws InterruptedException
        {
            return terminatedLatch.get(number).await(WAIT_SECONDS, TimeUnit.SECONDS);
        }
    }

    private String newAddress(final String scheme)
    {
        switch (scheme)
        {
            case "inproc":
                return "inproc://per-connection-" + IDS.incrementAndGet();
            case "shm":
                return "shm://per-connection-" + ProcessHandle.current().pid() + "-" + IDS.incrementAndGet();
            case "tcp":
                return "tcp://127.0.0.1:0";
            default:
                throw new IllegalArgumentException(scheme);
        }
    }

    private void start(final String scheme) throws Exception
    {
        start(scheme, UnaryOperator.identity());
    }

    private void start(final String scheme, final UnaryOperator<ReverbServerBuilder> configure) throws Exception
    {
        address = newAddress(scheme);
        final ServerInterceptor recordConnection = new ServerInterceptor()
        {
            @Override
            public <Q, R> ServerCall.Listener<Q> interceptCall(
                final ServerCall<Q, R> call, final Metadata headers, final ServerCallHandler<Q, R> next)
            {
                lastCallConnection.set(call.getAttributes().get(CONNECTION));
                return next.startCall(call, headers);
            }
        };
        server = configure.apply(ReverbServerBuilder.forAddress(address))
            .addService(ServerInterceptors.intercept(service, recordConnection))
            .addTransportFilter(filter)
            .build().start();
    }

    private ManagedChannel channel()
    {
        final ManagedChannel channel = ReverbChannelBuilder.forTarget(server.getListenSockets().get(0).toString()).build();
        channels.add(channel);
        return channel;
    }

    /** A unary call on the channel; returns the connection number its server call saw. */
    private Integer call(final ManagedChannel channel)
    {
        EchoGrpc.newBlockingStub(channel).withDeadlineAfter(WAIT_SECONDS, TimeUnit.SECONDS)
            .unary(EchoRequest.newBuilder().setPayload(ByteString.copyFromUtf8("x")).build());
        return lastCallConnection.get();
    }

    /** @return the remote address of each socket grpc-java's channelz lists for the server. */
    private List<SocketAddress> channelzSockets() throws Exception
    {
        final long serverId = ((InternalInstrumented<?>)server).getLogId().getId();
        final List<SocketAddress> remotes = new ArrayList<>();
        for (final InternalWithLogId socket : InternalChannelz.instance().getServerSockets(serverId, 0, 100).sockets)
        {
            remotes.add(InternalChannelz.instance().getSocket(socket.getLogId().getId()).getStats()
                .get(WAIT_SECONDS, TimeUnit.SECONDS).remote);
        }
        return remotes;
    }

    @AfterEach
    void tearDown() throws Exception
    {
        for (final ManagedChannel channel : channels)
        {
            channel.shutdownNow();
            assertThat(channel.awaitTermination(WAIT_SECONDS, TimeUnit.SECONDS)).isTrue();
        }
        if (server != null)
        {
            server.shutdownNow();
            assertThat(server.awaitTermination(WAIT_SECONDS, TimeUnit.SECONDS)).isTrue();
            AbstractReverbConformanceTest.assertReleased(address);
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"inproc", "shm", "tcp"})
    void oneTransportPerConnectionEachTerminatedWithItsConnection(final String scheme) throws Exception
    {
        start(scheme);
        final ManagedChannel first = channel();
        final ManagedChannel second = channel();

        assertThat(call(first)).isEqualTo(1);
        assertThat(call(second)).isEqualTo(2);
        assertThat(call(first)).as("the first channel's calls stay on its connection").isEqualTo(1);
        assertThat(call(second)).isEqualTo(2);
        assertThat(filter.ready.get()).as("transportReady once per connection").isEqualTo(2);
        assertThat(filter.remotes).as("each with its connection's remote address").doesNotContainNull();
        if ("tcp".equals(scheme))
        {
            assertThat(filter.remotes).as("two client ports").hasSize(2); // shm and inproc name the server's address
        }

        assertThat(channelzSockets()).as("channelz: one socket per connection, each with its remote address")
            .hasSize(2).doesNotContainNull();

        first.shutdownNow();
        assertThat(first.awaitTermination(WAIT_SECONDS, TimeUnit.SECONDS)).isTrue();
        assertThat(filter.awaitTerminated(1)).as("the first connection's transport terminated").isTrue();
        // grpc-java removes the socket from channelz right after the filters' transportTerminated, on that thread
        final long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(WAIT_SECONDS);
        while (channelzSockets().size() > 1 && System.nanoTime() - until < 0)
        {
            Thread.sleep(1);
        }
        assertThat(channelzSockets()).as("channelz: the first connection's socket gone").hasSize(1);
        assertThat(filter.terminated).doesNotContainKey(2);
        assertThat(call(second)).as("the other connection still serves").isEqualTo(2);

        server.shutdown();
        assertThat(server.awaitTermination(WAIT_SECONDS, TimeUnit.SECONDS)).isTrue();
        assertThat(filter.awaitTerminated(2)).isTrue();
        assertThat(filter.terminated.get(1).get()).as("transportTerminated once per transport").isOne();
        assertThat(filter.terminated.get(2).get()).isOne();
        assertThat(filter.ready.get()).isEqualTo(2);
    }

    @ParameterizedTest
    @ValueSource(strings = {"inproc", "tcp"})
    void serverShutdownNowEndsTheCallsOfEveryTransport(final String scheme) throws Exception
    {
        start(scheme);
        final ManagedChannel first = channel();
        final ManagedChannel second = channel();
        assertThat(call(first)).isEqualTo(1);
        assertThat(call(second)).isEqualTo(2);
        service.delayedStarted = new CountDownLatch(2);
        final EchoRequest slow = EchoRequest.newBuilder().setDelayMillis((int)TimeUnit.SECONDS.toMillis(WAIT_SECONDS * 4))
            .build();
        final Map<ManagedChannel, Status> ends = new ConcurrentHashMap<>();
        final CountDownLatch ended = new CountDownLatch(2);
        for (final ManagedChannel channel : List.of(first, second))
        {
            final Thread caller = new Thread(() ->
            {
                try
                {
                    EchoGrpc.newBlockingStub(channel).unary(slow);
                    ends.put(channel, Status.OK);
                }
                catch (final StatusRuntimeException e)
                {
                    ends.put(channel, e.getStatus());
                }
                ended.countDown();
            }, "slow-call");
            caller.setDaemon(true);
            caller.start();
        }
        assertThat(service.delayedStarted.await(WAIT_SECONDS, TimeUnit.SECONDS)).as("both slow calls running").isTrue();

        server.shutdownNow();
        assertThat(ended.await(WAIT_SECONDS, TimeUnit.SECONDS)).as("both calls ended").isTrue();
        assertThat(ends.get(first).getCode()).isNotEqualTo(Status.Code.OK);
        assertThat(ends.get(second).getCode()).isNotEqualTo(Status.Code.OK);
        assertThat(server.awaitTermination(WAIT_SECONDS, TimeUnit.SECONDS)).isTrue();
        assertThat(filter.awaitTerminated(1)).isTrue();
        assertThat(filter.awaitTerminated(2)).isTrue();
        // the handlers see the cancellation on their own threads, maybe after the clients got their status
        final long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(WAIT_SECONDS);
        while (service.cancellations.get() < 2 && System.nanoTime() - until < 0)
        {
            Thread.sleep(1);
        }
        assertThat(service.cancellations.get()).as("both handlers saw their Context cancelled").isEqualTo(2);
    }

    @ParameterizedTest
    @ValueSource(strings = {"inproc", "tcp"})
    void maxConnectionIdleEndsAnIdleTransportAndTheChannelGoesOnOverANewOne(final String scheme) throws Exception
    {
        start(scheme, b -> b.maxConnectionIdle(100, TimeUnit.MILLISECONDS));
        final ManagedChannel channel = channel();
        final int first = call(channel);
        // no call: the connection is drained once idle, and the next call goes over a new one
        assertThat(filter.awaitTerminated(first)).as("the idle connection's transport terminated").isTrue();
        assertThat(call(channel)).as("the next call on a newer connection").isGreaterThan(first);
    }

    /** Netty's server keep-alive settings (grpc-java's ServerBuilder throws UnsupportedOperationException for them). */
    @Test
    void keepAliveSettingsReachTheReverbServer() throws Exception
    {
        final AtomicReference<RpcServer.Builder> applied = new AtomicReference<>();
        start("inproc", b -> b.keepAliveTime(3, TimeUnit.MINUTES).keepAliveTimeout(7, TimeUnit.SECONDS)
            .reverbServer(r ->
            {
                applied.set(r);
                return r;
            }));
        call(channel());
        assertThat(applied.get().keepAliveTimeNanos()).isEqualTo(TimeUnit.MINUTES.toNanos(3));
        assertThat(applied.get().keepAliveTimeoutNanos()).isEqualTo(TimeUnit.SECONDS.toNanos(7));
        assertThatThrownBy(() -> ReverbServerBuilder.forAddress(address).keepAliveTime(0, TimeUnit.SECONDS))
            .isInstanceOf(IllegalArgumentException.class);
        final AtomicReference<RpcServer.Builder> off = new AtomicReference<>();
        ReverbServerBuilder.forAddress(newAddress("inproc")).keepAliveTime(Long.MAX_VALUE, TimeUnit.NANOSECONDS)
            .reverbServer(r ->
            {
                off.set(r);
                return r;
            }).build().start().shutdownNow();
        assertThat(off.get().keepAliveTimeNanos()).as("as large as infinite: off").isEqualTo(Long.MAX_VALUE);
    }

    @ParameterizedTest
    @ValueSource(strings = {"inproc", "tcp"})
    void maxConnectionAgeEndsEachTransportAndTheChannelGoesOnOverANewOne(final String scheme) throws Exception
    {
        start(scheme, b -> b.maxConnectionAge(50, TimeUnit.MILLISECONDS));
        final ManagedChannel channel = channel();
        // 1, or a later one where the first connection aged before the first call reached it (a loaded host)
        final int first = call(channel);
        // calls go on (every one must succeed) until that connection was drained and the channel made another
        final long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(WAIT_SECONDS);
        while (filter.ready.get() <= first)
        {
            assertThat(System.nanoTime() - until).as("a newer connection (safety net)").isNegative();
            call(channel);
        }
        assertThat(filter.awaitTerminated(first)).as("the aged connection's transport terminated").isTrue();
        assertThat(filter.terminated.get(first).get()).isOne();
        final Integer onNewConnection = call(channel);
        assertThat(onNewConnection).as("later calls on a newer connection").isGreaterThan(first);
    }
}
