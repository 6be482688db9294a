package io.reverb.rpc.transport.inproc;

import static org.assertj.core.api.Assertions.assertThat;

import io.reverb.common.ClaimResult;
import io.reverb.common.WriteClaim;
import io.reverb.rpc.transport.Connection;
import io.reverb.rpc.transport.ConnectionHandler;
import io.reverb.rpc.transport.ServerListener;
import java.net.URI;
import java.nio.ByteBuffer;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BiConsumer;
import org.junit.jupiter.api.Test;

/**
 * Where inproc messages are delivered ({@link InprocDelivery}): a message sent from within a delivery is delivered
 * by the same thread after it, and a delivery that blocks does not hold up the connection kept for after it.
 */
class InprocDeliveryTest
{
    private final InprocTransportProvider provider = new InprocTransportProvider();

    /** Runs {@code onMessage} for each message (with its first byte), records the threads it ran on. */
    private static final class Handler implements ConnectionHandler
    {
        final Set<String> threads = ConcurrentHashMap.newKeySet();
        final AtomicInteger received = new AtomicInteger();
        final CompletableFuture<Throwable> closed = new CompletableFuture<>();
        private final BiConsumer<Connection, Byte> onMessage;

        Handler(final BiConsumer<Connection, Byte> onMessage)
        {
            this.onMessage = onMessage;
        }

        @Override
        public void onMessage(final Connection connection, final ByteBuffer message)
        {
            threads.add(Thread.currentThread().getName());
            received.incrementAndGet();
            onMessage.accept(connection, message.get(message.position()));
        }

        @Override
        public void onWritable(final Connection connection)
        {
        }

        @Override
        public void onClose(final Connection connection, final Throwable cause)
        {
            closed.complete(cause);
        }
    }

    /** Waits, on the delivery thread, for the latch (at most 30 s), and says whether it opened. */
    private static void awaitInto(final CountDownLatch latch, final CompletableFuture<Boolean> opened)
    {
        try
        {
            opened.complete(latch.await(30, TimeUnit.SECONDS));
        }
        catch (final InterruptedException e)
        {
            Thread.currentThread().interrupt();
            opened.complete(false);
        }
    }

    private static void send(final Connection connection, final byte value)
    {
        final WriteClaim claim = new WriteClaim();
        assertThat(connection.tryClaim(1, claim)).isEqualTo(ClaimResult.OK);
        claim.buffer().put(claim.offset(), value);
        assertThat(claim.commit()).isEqualTo(ClaimResult.OK);
    }

    @Test
    void shouldRunAPingPongStartedFromOutsideOnOneDeliveryThread() throws Exception
    {
        final int rounds = 2_000;
        final CountDownLatch done = new CountDownLatch(1);
        final Handler server = new Handler(InprocDeliveryTest::send); // echo, from within the delivery
        final AtomicInteger replies = new AtomicInteger();
        final Handler client = new Handler((connection, value) ->
        {
            if (replies.incrementAndGet() < rounds)
            {
                send(connection, value); // the next request, from within the reply's delivery
            }
            else
            {
                done.countDown();
            }
        });
        final URI uri = URI.create("inproc://delivery-ping-pong");
        InprocDelivery.rescueTick(TimeUnit.HOURS.toNanos(1)); // nothing rescued: where each delivery runs is exact
        try (ServerListener ignored = provider.listen(uri, c -> server))
        {
            final Connection connection = provider.connect(uri, client).get(10, TimeUnit.SECONDS);
            send(connection, (byte)7);
            assertThat(done.await(30, TimeUnit.SECONDS)).isTrue();
            assertThat(server.received.get()).isEqualTo(rounds);
            assertThat(client.received.get()).isEqualTo(rounds);
            // every request and every reply after the first request's hand-over: one thread, no other woken
            assertThat(server.threads).hasSize(1);
            assertThat(client.threads).isEqualTo(server.threads);
            assertThat(server.threads.iterator().next()).startsWith("reverb-inproc-");
            connection.close();
            assertThat(server.closed.get(10, TimeUnit.SECONDS)).isNull();
            assertThat(connection.resourceUsage().bytesInUse()).isZero();
        }
        finally
        {
            InprocDelivery.rescueTick(InprocDelivery.RESCUE_TICK_NANOS);
        }
    }

    @Test
    void shouldDeliverToThePeerOfADeliveryThatWaitsForIt() throws Exception
    {
        // the server's handler answers and then waits, on the delivery thread, until the client has read the answer:
        // the client's connection, kept for that thread, must reach another one
        final CountDownLatch clientRead = new CountDownLatch(1);
        final CompletableFuture<Boolean> serverSawIt = new CompletableFuture<>();
        final Handler server = new Handler((connection, value) ->
        {
            send(connection, value);
            awaitInto(clientRead, serverSawIt);
        });
        final Handler client = new Handler((connection, value) -> clientRead.countDown());
        final URI uri = URI.create("inproc://delivery-blocked");
        try (ServerListener ignored = provider.listen(uri, c -> server))
        {
            final Connection connection = provider.connect(uri, client).get(10, TimeUnit.SECONDS);
            send(connection, (byte)1);
            assertThat(serverSawIt.get(60, TimeUnit.SECONDS)).isTrue();
            assertThat(client.threads).doesNotContainAnyElementsOf(server.threads);
            connection.close();
            assertThat(client.closed.get(10, TimeUnit.SECONDS)).isNull();
        }
    }

    @Test
    void shouldNotRescueAKeptConnectionWhenTheWatchdogIsWokenBeforeItsTick() throws Exception
    {
        // The server answers (its thread keeps the client's connection for after the delivery) and then waits. The
        // watchdog, woken again and again within its tick (stale permits from keep(), rescueTick), must not count
        // those wake-ups as "two looks in a row" and hand the kept connection to another thread: a CI run saw a
        // ping-pong's deliveries move to a second thread so.
        final CountDownLatch serverWaiting = new CountDownLatch(1);
        final CountDownLatch release = new CountDownLatch(1);
        final CompletableFuture<Boolean> released = new CompletableFuture<>();
        final Handler server = new Handler((connection, value) ->
        {
            send(connection, value);
            serverWaiting.countDown();
            awaitInto(release, released);
        });
        final Handler client = new Handler((connection, value) -> { });
        final URI uri = URI.create("inproc://delivery-early-wake");
        InprocDelivery.rescueTick(TimeUnit.HOURS.toNanos(1));
        try (ServerListener ignored = provider.listen(uri, c -> server))
        {
            final Connection connection = provider.connect(uri, client).get(10, TimeUnit.SECONDS);
            send(connection, (byte)3);
            assertThat(serverWaiting.await(30, TimeUnit.SECONDS)).isTrue();
            for (int i = 0; i < 3; i++)
            {
                Thread.sleep(20);
                InprocDelivery.rescueTick(TimeUnit.HOURS.toNanos(1)); // wakes the watchdog, within its tick
            }
            Thread.sleep(20);
            assertThat(client.received).as("replies delivered while the server's thread still delivers").hasValue(0);
            release.countDown();
            assertThat(released.get(30, TimeUnit.SECONDS)).isTrue();
            // the kept connection is drained by the same thread once its delivery returns
            final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (client.received.get() == 0 && System.nanoTime() < deadline)
            {
                Thread.sleep(5);
            }
            assertThat(client.received).hasValue(1);
            assertThat(client.threads).isEqualTo(server.threads);
            connection.close();
            assertThat(client.closed.get(10, TimeUnit.SECONDS)).isNull();
        }
        finally
        {
            InprocDelivery.rescueTick(InprocDelivery.RESCUE_TICK_NANOS);
        }
    }

    @Test
    void shouldNotKeepAPeerBehindMessagesStillQueuedInTheDrain() throws Exception
    {
        // requests queued before the server's drain starts: the reply to the first must reach the client while the
        // drain goes on with the others, at the latest once KEEP_BEHIND more were delivered: the last one's handler
        // waits for it, with no watchdog to rescue it
        final CountDownLatch firstReplyRead = new CountDownLatch(1);
        final CompletableFuture<Boolean> secondSawIt = new CompletableFuture<>();
        final Handler server = new Handler((connection, value) ->
        {
            if (value == 1)
            {
                send(connection, value);
                return;
            }
            if (value == 2)
            {
                awaitInto(firstReplyRead, secondSawIt);
            }
        });
        final Handler client = new Handler((connection, value) -> firstReplyRead.countDown());
        final String name = "delivery-queued";
        final URI uri = URI.create("inproc://" + name);
        InprocDelivery.rescueTick(TimeUnit.HOURS.toNanos(1));
        try (ServerListener ignored = provider.listen(uri, c -> server))
        {
            final Connection connection = provider.connect(uri, client).get(10, TimeUnit.SECONDS);
            InprocTransportProvider.freezeServer(name, true);
            send(connection, (byte)1);
            for (int i = 0; i < InprocDelivery.KEEP_BEHIND; i++)
            {
                send(connection, (byte)0);
            }
            send(connection, (byte)2);
            InprocTransportProvider.freezeServer(name, false);
            assertThat(secondSawIt.get(60, TimeUnit.SECONDS)).isTrue();
            connection.close();
            assertThat(client.closed.get(10, TimeUnit.SECONDS)).isNull();
        }
        finally
        {
            InprocDelivery.rescueTick(InprocDelivery.RESCUE_TICK_NANOS);
        }
    }

    @Test
    void aHandlerFailingOnEveryMessageShouldGoThroughTheLogLimiterAndLoseNoCapacity() throws Exception
    {
        final Handler server = new Handler((connection, value) ->
        {
            throw new IllegalStateException("handler bug");
        });
        final Handler client = new Handler((connection, value) -> { });
        final URI uri = URI.create("inproc://delivery-failing?capacity=64");
        try (ServerListener ignored = provider.listen(uri, c -> server))
        {
            final Connection connection = provider.connect(uri, client).get(10, TimeUnit.SECONDS);
            final long offeredBefore = InprocConnection.FAILURES.offered();
            final int messages = 200; // far more than the capacity: each failed delivery must give its space back
            final WriteClaim claim = new WriteClaim();
            for (int sent = 0; sent < messages; )
            {
                final int result = connection.tryClaim(16, claim);
                if (result == ClaimResult.OK)
                {
                    assertThat(claim.commit()).isEqualTo(ClaimResult.OK);
                    sent++;
                }
                else
                {
                    assertThat(result).isEqualTo(ClaimResult.BACK_PRESSURED);
                    Thread.onSpinWait();
                }
            }
            // the handler counts a message before it throws, and the failure reaches the limiter after: wait for both
            final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while ((server.received.get() < messages || InprocConnection.FAILURES.offered() - offeredBefore < messages)
                && System.nanoTime() < deadline)
            {
                Thread.sleep(1);
            }
            assertThat(server.received.get()).isEqualTo(messages);
            assertThat(InprocConnection.FAILURES.offered() - offeredBefore).isEqualTo(messages);
            connection.close();
            assertThat(client.closed.get(10, TimeUnit.SECONDS)).isNull();
            // the last delivery gives its space back in a finally block, just after its failure is logged
            while (connection.resourceUsage().bytesInUse() != 0 && System.nanoTime() < deadline)
            {
                Thread.sleep(1);
            }
            assertThat(connection.resourceUsage().bytesInUse()).isZero();
        }
    }

    @Test
    void shouldEndTheWatchdogWithTheLastDeliveryThreadAndStartAnotherWithTheNext() throws Exception
    {
        InprocDelivery.idleThreadsLive(TimeUnit.MILLISECONDS.toNanos(20));
        try
        {
            pingPong("inproc://delivery-lifecycle-1", 100);
            // idle: the pool's threads end, and the watchdog with the last of them (nothing of this transport stays)
            final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            // a thread that has left its run loop is still alive for a moment: wait for both to be gone
            while ((InprocDelivery.watchdogRuns() || inprocThreadsAlive()) && System.nanoTime() < deadline)
            {
                Thread.sleep(5);
            }
            assertThat(InprocDelivery.watchdogRuns()).as("watchdog after the last delivery thread ended").isFalse();
            assertThat(inprocThreadsAlive()).as("reverb-inproc-* threads alive").isFalse();
            // the new threads stay a minute: a pause of 20 ms before the check below must not end them and it
            InprocDelivery.idleThreadsLive(TimeUnit.MINUTES.toNanos(1));
            pingPong("inproc://delivery-lifecycle-2", 100); // new delivery threads, a new watchdog
            assertThat(InprocDelivery.watchdogRuns()).isTrue();
        }
        finally
        {
            InprocDelivery.idleThreadsLive(TimeUnit.MINUTES.toNanos(1));
        }
    }

    private static boolean inprocThreadsAlive()
    {
        return Thread.getAllStackTraces().keySet().stream().anyMatch(t -> t.getName().startsWith("reverb-inproc-"));
    }

    private void pingPong(final String address, final int rounds) throws Exception
    {
        final CountDownLatch done = new CountDownLatch(1);
        final AtomicInteger replies = new AtomicInteger();
        final Handler server = new Handler(InprocDeliveryTest::send);
        final Handler client = new Handler((connection, value) ->
        {
            if (replies.incrementAndGet() < rounds)
            {
                send(connection, value);
            }
            else
            {
                done.countDown();
            }
        });
        final URI uri = URI.create(address);
        try (ServerListener ignored = provider.listen(uri, c -> server))
        {
            final Connection connection = provider.connect(uri, client).get(10, TimeUnit.SECONDS);
            send(connection, (byte)3);
            assertThat(done.await(30, TimeUnit.SECONDS)).isTrue();
            connection.close();
            assertThat(client.closed.get(10, TimeUnit.SECONDS)).isNull();
        }
    }
}
