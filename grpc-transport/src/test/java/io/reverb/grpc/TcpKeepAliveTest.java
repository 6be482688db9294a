package io.reverb.grpc;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.common.util.concurrent.ListenableFuture;
import com.google.protobuf.ByteString;
import io.grpc.ConnectivityState;
import io.grpc.ManagedChannel;
import io.grpc.Server;
import io.grpc.Status;
import io.reverb.grpc.test.EchoGrpc;
import io.reverb.grpc.test.EchoReply;
import io.reverb.grpc.test.EchoRequest;
import io.reverb.grpc.test.EchoRpc;
import io.reverb.rpc.RpcChannel;
import io.reverb.rpc.RpcException;
import io.reverb.rpc.StatusCode;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import reactor.test.scheduler.VirtualTimeScheduler;

/**
 * Keep-alive over {@code tcp://} with the link cut (issue 25, item 4): a grpc-java server over Reverb behind a
 * {@link CuttableLink}; once the link is cut nothing closes, so only the client's keep-alive can notice. The
 * client's timers run on a virtual clock: each test checks that the connection is still up at keep-alive interval +
 * timeout - 1 ms and down right after interval + timeout + 1 ms (counted, not timed), for a channel with a call
 * open and for an idle one with keep-alive without calls, native and grpc-java.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class TcpKeepAliveTest
{
    private static final Duration INTERVAL = Duration.ofSeconds(10);
    private static final Duration PING_TIMEOUT = Duration.ofSeconds(5);
    private static final Duration MARGIN = Duration.ofMillis(1);
    private static final Duration SAFETY_NET = Duration.ofSeconds(20);

    private final List<AutoCloseable> closeables = new ArrayList<>();
    private final VirtualTimeScheduler clock = VirtualTimeScheduler.create();
    private final GrpcEchoService service = new GrpcEchoService();
    private CuttableLink link;

    @BeforeEach
    void startServerBehindALink() throws Exception
    {
        final Server server = ReverbServerBuilder.forAddress("tcp://127.0.0.1:0").addService(service)
            .permitKeepAliveWithoutCalls(true).build().start();
        closeables.add(() ->
        {
            server.shutdownNow();
            assertThat(server.awaitTermination(10, TimeUnit.SECONDS)).isTrue();
        });
        final String bound = server.getListenSockets().get(0).toString(); // tcp://127.0.0.1:port
        link = new CuttableLink(Integer.parseInt(bound.substring(bound.lastIndexOf(':') + 1)));
        closeables.add(link);
    }

    @AfterEach
    void closeAndCheckForLeaks() throws Exception
    {
        for (int i = closeables.size() - 1; i >= 0; i--)
        {
            closeables.get(i).close();
        }
        clock.dispose();
        AbstractReverbConformanceTest.assertReleased("tcp://127.0.0.1:0");
    }

    private static EchoRequest request(final int delayMillis)
    {
        return EchoRequest.newBuilder().setPayload(ByteString.copyFromUtf8("x")).setDelayMillis(delayMillis).build();
    }

    private RpcChannel nativeChannel(final boolean withoutCalls, final AtomicInteger lost)
    {
        final RpcChannel channel = RpcChannel.builder(link.address()).keepAlive(INTERVAL, PING_TIMEOUT)
            .keepAliveWithoutCalls(withoutCalls).timerScheduler(clock).build();
        countLost(channel, channel.state(false), lost);
        closeables.add(channel);
        return channel;
    }

    /** Counts the native channel's moves out of READY (its connection stopped taking calls). */
    // CHECKSTYLE.OFF: InlineFullyQualifiedName - grpc-java's ConnectivityState is imported, Reverb's is spelled out
    private static void countLost(final RpcChannel channel, final io.reverb.rpc.ConnectivityState seen,
        final AtomicInteger lost)
    {
        channel.notifyWhenStateChanged(seen, () ->
        {
            final io.reverb.rpc.ConnectivityState now = channel.state(false);
            if (seen == io.reverb.rpc.ConnectivityState.READY)
            {
                lost.incrementAndGet();
            }
            if (now != io.reverb.rpc.ConnectivityState.SHUTDOWN)
            {
                countLost(channel, now, lost);
            }
        });
    }
    // CHECKSTYLE.ON: InlineFullyQualifiedName

    private ManagedChannel grpcChannel(final boolean withoutCalls)
    {
        final ManagedChannel channel = ReverbChannelBuilder.forTarget(link.address())
            .keepAliveTime(INTERVAL.toMillis(), TimeUnit.MILLISECONDS)
            .keepAliveTimeout(PING_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)
            .keepAliveWithoutCalls(withoutCalls)
            .reverbChannel(b -> b.timerScheduler(clock))
            .build();
        closeables.add(() ->
        {
            channel.shutdownNow();
            assertThat(channel.awaitTermination(10, TimeUnit.SECONDS)).isTrue();
        });
        return channel;
    }

    /**
     * grpc-java's channel publishes its new picker before its READY state (ManagedChannelImpl's updateBalancingState):
     * a first call can end before the state says READY, so a test waits for it (in real time, bounded) before it cuts.
     */
    private static void awaitReady(final ManagedChannel channel) throws InterruptedException
    {
        final long until = System.nanoTime() + SAFETY_NET.toNanos();
        while (channel.getState(false) != ConnectivityState.READY && System.nanoTime() < until)
        {
            Thread.sleep(1);
        }
        assertThat(channel.getState(false)).isEqualTo(ConnectivityState.READY);
    }

    /** Cuts the link, then checks "up" just before interval + timeout and "down" just after it. */
    private void cutAndCheckNoticedOnTime(final BooleanSupplier down, final String what) throws InterruptedException
    {
        link.cut();
        clock.advanceTimeBy(INTERVAL); // the PING leaves into the cut link
        clock.advanceTimeBy(PING_TIMEOUT.minus(MARGIN));
        assertThat(down.getAsBoolean()).as(what + ": still up at interval + timeout - 1 ms").isFalse();
        clock.advanceTimeBy(MARGIN.multipliedBy(2));
        final long until = System.nanoTime() + SAFETY_NET.toNanos();
        while (!down.getAsBoolean())
        {
            assertThat(System.nanoTime() - until).as(what + ": noticed after interval + timeout + 1 ms").isNegative();
            Thread.sleep(2);
        }
    }

    @Test
    void nativeChannelWithACallOpenShouldNoticeTheCutLinkWithinIntervalPlusTimeout() throws Exception
    {
        final RpcChannel channel = nativeChannel(false, new AtomicInteger());
        final CompletableFuture<Throwable> failure = new CompletableFuture<>();
        EchoRpc.newReactorStub(channel).unary(request(60_000)).subscribe(r -> failure.complete(null), failure::complete);
        assertThat(service.delayedStarted.await(10, TimeUnit.SECONDS)).isTrue();

        cutAndCheckNoticedOnTime(failure::isDone, "native call");
        final Throwable t = failure.get();
        assertThat(t).isInstanceOf(RpcException.class);
        assertThat(((RpcException)t).status().code()).isEqualTo(StatusCode.UNAVAILABLE);
        assertThat(((RpcException)t).status().description()).contains("keep-alive");
    }

    @Test
    void grpcChannelWithACallOpenShouldNoticeTheCutLinkWithinIntervalPlusTimeout() throws Exception
    {
        final ManagedChannel channel = grpcChannel(false);
        final ListenableFuture<EchoReply> reply = EchoGrpc.newFutureStub(channel).unary(request(60_000));
        assertThat(service.delayedStarted.await(10, TimeUnit.SECONDS)).isTrue();

        cutAndCheckNoticedOnTime(reply::isDone, "grpc-java call");
        try
        {
            reply.get();
            throw new AssertionError("the call should have failed");
        }
        catch (final ExecutionException e)
        {
            final Status status = Status.fromThrowable(e.getCause());
            assertThat(status.getCode()).isEqualTo(Status.Code.UNAVAILABLE);
            assertThat(status.getDescription()).contains("keep-alive");
        }
    }

    @Test
    void idleNativeChannelWithKeepAliveWithoutCallsShouldNoticeTheCutLink() throws Exception
    {
        final AtomicInteger lost = new AtomicInteger();
        final RpcChannel channel = nativeChannel(true, lost);
        assertThat(EchoRpc.newReactorStub(channel).unary(request(0)).block(SAFETY_NET)).isNotNull();

        cutAndCheckNoticedOnTime(() -> lost.get() > 0, "idle native channel");
        assertThat(lost.get()).isEqualTo(1);
    }

    @Test
    void idleGrpcChannelWithKeepAliveWithoutCallsShouldNoticeTheCutLink() throws Exception
    {
        final ManagedChannel channel = grpcChannel(true);
        assertThat(EchoGrpc.newBlockingStub(channel).unary(request(0))).isNotNull();
        awaitReady(channel);

        cutAndCheckNoticedOnTime(() -> channel.getState(false) != ConnectivityState.READY, "idle grpc-java channel");
    }

    @Test
    void idleChannelsWithoutKeepAliveWithoutCallsSendNothingAndNoticeNothing() throws Exception
    {
        // the default, as in grpc-java: nothing goes out on an idle connection, so a cut link stays unnoticed
        final AtomicInteger lost = new AtomicInteger();
        final RpcChannel nativeChannel = nativeChannel(false, lost);
        assertThat(EchoRpc.newReactorStub(nativeChannel).unary(request(0)).block(SAFETY_NET)).isNotNull();
        final ManagedChannel grpcChannel = grpcChannel(false);
        assertThat(EchoGrpc.newBlockingStub(grpcChannel).unary(request(0))).isNotNull();
        awaitReady(grpcChannel);

        link.cut();
        clock.advanceTimeBy(INTERVAL.plus(PING_TIMEOUT).multipliedBy(4));
        assertThat(lost.get()).isZero();
        assertThat(grpcChannel.getState(false)).isEqualTo(ConnectivityState.READY);
    }
}
