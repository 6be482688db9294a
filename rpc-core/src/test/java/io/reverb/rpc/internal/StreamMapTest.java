package io.reverb.rpc.internal;

import static org.assertj.core.api.Assertions.assertThat;

import io.reverb.rpc.Status;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadInfo;
import java.lang.management.ThreadMXBean;
import java.nio.ByteBuffer;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/**
 * The stream map's lookup (one per inbound frame that names a stream) takes no monitor: it neither waits for a
 * thread that holds the map's monitor nor misses a stream while another thread adds, removes and rehashes.
 */
class StreamMapTest
{
    @Test
    void shouldLookUpWithoutWaitingForAThreadThatHoldsTheMonitor() throws Exception
    {
        final StreamMap map = new StreamMap();
        final Stream stream = new Stream();
        map.put(7, stream);
        final CountDownLatch held = new CountDownLatch(1);
        final CountDownLatch release = new CountDownLatch(1);
        final Thread holder = new Thread(() ->
        {
            synchronized (map) // as the server's drain lock holds it while it writes a GOAWAY
            {
                held.countDown();
                awaitQuietly(release);
            }
        });
        holder.start();
        held.await();
        final AtomicReference<RpcStream> found = new AtomicReference<>();
        final Thread lookup = new Thread(() -> found.set(map.get(7)));
        lookup.start();
        final ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        boolean waitedForHolder = false;
        // either it ends (no monitor taken) or it blocks on the holder's monitor: one of the two, whatever the
        // scheduling (a moment blocked on another lock, e.g. loading a class, is neither)
        while (lookup.getState() != Thread.State.TERMINATED && !waitedForHolder)
        {
            final ThreadInfo info = threads.getThreadInfo(lookup.getId());
            waitedForHolder = info != null && info.getThreadState() == Thread.State.BLOCKED &&
                info.getLockOwnerId() == holder.getId();
            Thread.onSpinWait();
        }
        release.countDown();
        lookup.join();
        holder.join();
        assertThat(waitedForHolder).as("the lookup waited for the thread that held the map's monitor").isFalse();
        assertThat(found.get()).isSameAs(stream);
    }

    @Test
    void shouldNeverMissAStreamWhileAnotherThreadAddsRemovesAndRehashes() throws Exception
    {
        final StreamMap map = new StreamMap();
        final Stream[] kept = new Stream[8];
        for (int i = 0; i < kept.length; i++)
        {
            kept[i] = new Stream();
            map.put(100_000_001 + 2 * i, kept[i]);
        }
        final Thread writer = new Thread(() ->
        {
            final Stream churn = new Stream();
            // grows the table through many rehashes (the later ones copy tens of thousands of slots under the
            // readers) and removes every other id on the way, so that clusters shift back over the kept ids
            for (int id = 1; id <= 400_000; id++)
            {
                map.put(id, churn);
                if ((id & 1) == 0)
                {
                    map.remove(id - 1);
                }
            }
        });
        writer.start();
        long lookups = 0;
        long misses = 0;
        while (writer.isAlive() || lookups < 100_000)
        {
            for (int i = 0; i < kept.length; i++)
            {
                if (map.get(100_000_001 + 2 * i) != kept[i])
                {
                    misses++;
                }
                lookups++;
            }
        }
        writer.join();
        assertThat(misses).as("wrong answers in %d lookups", lookups).isZero();
        assertThat(map.size()).isEqualTo(kept.length + 200_000);
        assertThat(map.get(3)).isNull();
        assertThat(map.get(4)).isNotNull();
    }

    @Test
    void shouldFindEveryStreamAfterRemovalsInsideACluster()
    {
        final StreamMap map = new StreamMap();
        final Stream[] streams = new Stream[60];
        for (int i = 0; i < streams.length; i++)
        {
            streams[i] = new Stream();
            map.put(i + 1, streams[i]);
        }
        for (int i = 0; i < streams.length; i += 3)
        {
            assertThat(map.remove(i + 1)).isSameAs(streams[i]);
        }
        for (int i = 0; i < streams.length; i++)
        {
            assertThat(map.get(i + 1)).isSameAs(i % 3 == 0 ? null : streams[i]);
        }
        assertThat(map.clear()).hasSize(40);
        assertThat(map.get(2)).isNull();
        assertThat(map.isEmpty()).isTrue();
    }

    private static void awaitQuietly(final CountDownLatch latch)
    {
        try
        {
            latch.await();
        }
        catch (final InterruptedException e)
        {
            Thread.currentThread().interrupt();
        }
    }

    /** A stream that does nothing: the map only stores it. */
    private static final class Stream extends RpcStream
    {
        @Override
        void onMessage(final ByteBuffer payload, final boolean endOfStream)
        {
        }

        @Override
        void onOversizedMessage(final int length, final int limit)
        {
        }

        @Override
        void onUndecodableMessage(final Status status)
        {
        }

        @Override
        void onRequestN(final int n)
        {
        }

        @Override
        void onConnectionClosed(final Status status)
        {
        }

        @Override
        void onWriteFailed(final Status status)
        {
        }
    }
}
