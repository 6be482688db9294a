package io.reverb.common.counters;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.function.LongSupplier;
import org.agrona.concurrent.UnsafeBuffer;
import org.agrona.concurrent.status.AtomicCounter;
import org.agrona.concurrent.status.CountersReader;

/**
 * The counters of one thing (an engine, a connection, a poller, a server method), allocated together in the
 * process's counters file and freed together by {@link #close()}.
 *
 * <p>A counter is an Agrona {@link AtomicCounter}: its single writer increments it with
 * {@link AtomicCounter#incrementRelease()} (a plain add and an ordered store, no allocation, no lock); a counter
 * with several writers uses {@link AtomicCounter#increment()}. A gauge is a counter the process's sampler thread
 * sets from a supplier once a second ({@link ProcessCounters#SAMPLE_PERIOD_MS}), for values that are state rather
 * than events (credits available).
 *
 * <p>When the file is full, or counters are off, a group's counters live in the process's own memory: same code,
 * same numbers for Micrometer and the tests, only invisible to {@code reverb-stat}.
 */
public final class CounterGroup implements AutoCloseable
{
    private final ProcessCounters owner;
    private final int kind;
    private final long id;
    private final long parentId;
    private String label;
    private final List<AtomicCounter> counters = new ArrayList<>();
    private final List<ProcessCounters.Sampled> gauges = new ArrayList<>();
    private boolean closed;
    /** Where counters kept in memory live (a detached group, or the file full): 32 at a time. */
    private UnsafeBuffer chunk;
    private int chunkNext;
    private static final int DETACHED_CHUNK = 32;

    CounterGroup(final ProcessCounters owner, final int kind, final long id, final long parentId, final String label)
    {
        this.owner = owner;
        this.kind = kind;
        this.id = id;
        this.parentId = parentId;
        this.label = label;
    }

    /**
     * A group in no file: for totals and snapshots that no other process needs to see.
     *
     * @param label what the counters are of.
     * @return counters in this process's memory only.
     */
    public static CounterGroup detached(final String label)
    {
        return new CounterGroup(null, 0, 0, 0, label);
    }

    /** @return this group's id, unique in the process (0 for a detached group). */
    public long id()
    {
        return id;
    }

    /** @return what the counters are of. */
    public String label()
    {
        return label;
    }

    /**
     * Changes the label of the group's counters (a connection learns its peer after its counters exist).
     *
     * @param newLabel what the counters are of.
     */
    public synchronized void relabel(final String newLabel)
    {
        label = newLabel;
        if (owner != null && !closed)
        {
            for (final AtomicCounter counter : counters)
            {
                try
                {
                    counter.updateLabel(newLabel);
                }
                catch (final IllegalStateException inMemoryOnly)
                {
                    // A counter kept in memory (the file was full) has no label to change.
                }
                catch (final InternalError fault)
                {
                    owner.onFault(fault); // a page of the file faulted (SIGBUS): the label stays as it was
                    return;
                }
            }
        }
    }

    /**
     * A new counter. After {@link #close()} (a call that ends while its server is being torn down asks for its
     * status's counter late) the counter is one in this process's memory only: what it counts is lost, and
     * nothing fails.
     *
     * @param name the counter's short name (ASCII, at most {@link CountersLayout#MAX_NAME_LENGTH} characters).
     * @return a new counter at 0.
     */
    public synchronized AtomicCounter counter(final String name)
    {
        if (closed)
        {
            return detachedCounter();
        }
        AtomicCounter counter = owner == null ? null : owner.allocate(kind, id, parentId, label, name);
        if (counter == null)
        {
            counter = detachedCounter();
        }
        counters.add(counter);
        return counter;
    }

    /**
     * @param name   the gauge's short name.
     * @param source read by the sampler thread once a second; must be cheap and safe from any thread.
     * @return the counter the sampler writes (also set once now).
     */
    public synchronized AtomicCounter gauge(final String name, final LongSupplier source)
    {
        final AtomicCounter counter = counter(name);
        counter.setRelease(source.getAsLong());
        if (owner != null)
        {
            final ProcessCounters.Sampled sampled = new ProcessCounters.Sampled(counter, source);
            gauges.add(sampled);
            owner.addGauge(sampled);
        }
        return counter;
    }

    /** A counter in this process's memory only: a slot of a direct (8-byte aligned) chunk of this group's. */
    private AtomicCounter detachedCounter()
    {
        if (chunk == null || chunkNext == DETACHED_CHUNK)
        {
            chunk = new UnsafeBuffer(ByteBuffer.allocateDirect(DETACHED_CHUNK * CountersReader.COUNTER_LENGTH));
            chunkNext = 0;
        }
        return new AtomicCounter(chunk, chunkNext++);
    }

    /** Frees every counter of this group (its slots are reused after a grace period). Idempotent. */
    @Override
    public synchronized void close()
    {
        if (closed)
        {
            return;
        }
        closed = true;
        if (owner != null)
        {
            for (final ProcessCounters.Sampled gauge : gauges)
            {
                owner.removeGauge(gauge);
            }
        }
        for (final AtomicCounter counter : counters)
        {
            counter.close();
        }
    }

    @Override
    public String toString()
    {
        return CountersLayout.kindName(kind) + " " + id + " " + label;
    }
}
