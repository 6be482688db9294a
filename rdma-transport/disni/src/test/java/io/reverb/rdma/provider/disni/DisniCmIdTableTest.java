package io.reverb.rdma.provider.disni;

import static org.assertj.core.api.Assertions.assertThat;

import com.ibm.disni.verbs.impl.NatCmaIdPrivate;
import com.ibm.disni.verbs.impl.NatRdmaEventChannel;
import java.lang.reflect.Field;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * DiSNi 2.1's rdma_cm id table, on its real classes: {@code NatRdmaEventChannel.addCmId/getCmId} are the calls
 * {@code RdmaCmNat.createId} and {@code getCmEvent} make. Their constructors call {@code RdmaCm.open()}, which
 * loads libdisni, so the objects are allocated without running a constructor (as libdisni-less as it gets);
 * every method used here is DiSNi's own.
 */
class DisniCmIdTableTest
{
    @Test
    void shouldMakeTheTableThreadSafeKeepingExistingIds() throws Exception
    {
        final NatRdmaEventChannel channel = newChannel();
        final NatCmaIdPrivate listenId = newId(channel, 1);
        channel.addCmId(listenId);

        assertThat(CmIdTable.install(channel)).isTrue();
        assertThat(CmIdTable.install(channel)).as("idempotent").isTrue();

        assertThat(channel.getCmId(1)).isSameAs(listenId);
        assertThat(CmIdTable.size(channel)).isEqualTo(1);
    }

    @Test
    void shouldLoseNoIdWhileIdsAreCreatedOnSeveralThreadsAndEventsLookThemUp() throws Exception
    {
        final NatRdmaEventChannel channel = newChannel();
        final NatCmaIdPrivate listenId = newId(channel, 1);
        channel.addCmId(listenId);
        CmIdTable.install(channel);

        final int writers = 4;
        final int idsPerWriter = 5_000;
        final List<NatCmaIdPrivate> ids = new ArrayList<>();
        for (int i = 0; i < writers * idsPerWriter; i++)
        {
            ids.add(newId(channel, 1_000 + i));
        }
        final CountDownLatch start = new CountDownLatch(1);
        final AtomicBoolean writing = new AtomicBoolean(true);
        final AtomicLong missedLookups = new AtomicLong();
        final AtomicLong lookups = new AtomicLong();
        final Thread reader = new Thread(() ->
        {
            await(start);
            while (writing.get())
            {
                // What getCmEvent does for every event: look the listening id up while others are added.
                if (channel.getCmId(1) != listenId)
                {
                    missedLookups.incrementAndGet();
                }
                lookups.incrementAndGet();
            }
        });
        final List<Thread> threads = new ArrayList<>();
        for (int w = 0; w < writers; w++)
        {
            final int first = w * idsPerWriter;
            threads.add(new Thread(() ->
            {
                await(start);
                for (int i = first; i < first + idsPerWriter; i++)
                {
                    channel.addCmId(ids.get(i));
                }
            }));
        }
        reader.start();
        threads.forEach(Thread::start);
        start.countDown();
        for (final Thread thread : threads)
        {
            thread.join();
        }
        writing.set(false);
        reader.join();

        assertThat(missedLookups.get()).as("lookups of the listening id that missed, of " + lookups.get()).isZero();
        assertThat(CmIdTable.size(channel)).isEqualTo(writers * idsPerWriter + 1);
        for (final NatCmaIdPrivate id : ids)
        {
            assertThat(channel.getCmId(id.getObjId())).isSameAs(id);
        }
    }

    @Test
    void shouldForgetDestroyedIdsSoTheTableDoesNotGrowPerConnection() throws Exception
    {
        final NatRdmaEventChannel channel = newChannel();
        CmIdTable.install(channel);
        for (int connection = 0; connection < 1_000; connection++)
        {
            final NatCmaIdPrivate id = newId(channel, connection);
            channel.addCmId(id);
            CmIdTable.forget(channel, id);
        }

        assertThat(CmIdTable.size(channel)).isZero();
    }

    /**
     * Issue 24, part 2 item 5: DiSNi keys ids by the native id's address, which rdma_destroy_id frees. A
     * CONNECT_REQUEST read right after (on the dispatcher thread) can get a new id at that same address; the
     * table entry of the destroyed id must be gone before, or forgetting it afterwards drops the new id, whose
     * events are then lost.
     */
    @Test
    void shouldNotDropANewIdThatTakesTheAddressOfAnIdBeingDestroyed() throws Exception
    {
        final NatRdmaEventChannel channel = newChannel();
        CmIdTable.install(channel);
        final ScriptedCm cm = new ScriptedCm();
        final NatCmaIdPrivate old = cm.attach(newId(channel, 42));
        channel.addCmId(old);
        final NatCmaIdPrivate reused = newId(channel, 42);
        // What the native side allows once rdma_destroy_id returned: the address is free, and getCmEvent enters
        // the id of a new CONNECT_REQUEST allocated there.
        cm.onDestroy = id -> channel.addCmId(reused);
        final CmEventDispatcher dispatcher = new CmEventDispatcher(channel, null, false, "test-cm");

        dispatcher.destroyId(old);

        assertThat(cm.calls).containsExactly("destroyCmId");
        assertThat(channel.getCmId(42)).as("the new id at the reused address").isSameAs(reused);
        cm.onDestroy = id -> { };
        dispatcher.destroyId(cm.attach(reused));
        assertThat(CmIdTable.size(channel)).isZero();
    }

    private static void await(final CountDownLatch latch)
    {
        try
        {
            latch.await();
        }
        catch (final InterruptedException ex)
        {
            Thread.currentThread().interrupt();
        }
    }

    static NatRdmaEventChannel newChannel() throws Exception
    {
        final NatRdmaEventChannel channel = (NatRdmaEventChannel)unsafe().allocateInstance(NatRdmaEventChannel.class);
        // What the constructor does besides RdmaCm.open(): a plain HashMap.
        final Field idMap = NatRdmaEventChannel.class.getDeclaredField("idMap");
        idMap.setAccessible(true);
        idMap.set(channel, new HashMap<Long, NatCmaIdPrivate>());
        return channel;
    }

    static NatCmaIdPrivate newId(final NatRdmaEventChannel channel, final long objId) throws Exception
    {
        final NatCmaIdPrivate id = (NatCmaIdPrivate)unsafe().allocateInstance(NatCmaIdPrivate.class);
        final Field field = NatCmaIdPrivate.class.getDeclaredField("objId");
        field.setAccessible(true);
        field.setLong(id, objId);
        return id;
    }

    // CHECKSTYLE.OFF: InlineFullyQualifiedName - sun.misc may not be imported (IllegalImport)
    private static sun.misc.Unsafe unsafe() throws Exception
    {
        final Field field = sun.misc.Unsafe.class.getDeclaredField("theUnsafe");
        field.setAccessible(true);
        return (sun.misc.Unsafe)field.get(null);
    }
    // CHECKSTYLE.ON: InlineFullyQualifiedName
}
