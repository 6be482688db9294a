package io.reverb.bench.fault;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The server side's count of handler calls: started, answered, cancelled (the server's cancel callback ran), found
 * cancelled by the handler itself when it came to answer and whose cancel callback has not run (yet: at the server's
 * exit, never), started although their client had already given up on them (its deadline, carried in the request,
 * had passed), and which calls are running right now (by call id).
 */
public final class HandlerLedger
{
    /** Call id to the client's deadline (epoch ms), for the calls whose handler runs. */
    private final Map<Long, Long> running = new ConcurrentHashMap<>();
    private final AtomicLong started = new AtomicLong();
    private final AtomicLong answered = new AtomicLong();
    private final AtomicLong cancelled = new AtomicLong();
    /** Calls found cancelled by their handler whose cancel callback has not run. */
    private final Set<Long> awaitingCancelCallback = ConcurrentHashMap.newKeySet();
    private final AtomicLong expiredAtStart = new AtomicLong();

    /**
     * @param id              the call id.
     * @param deadlineEpochMs when the client gives up on the call.
     */
    public void started(final long id, final long deadlineEpochMs)
    {
        started.incrementAndGet();
        if (System.currentTimeMillis() > deadlineEpochMs)
        {
            expiredAtStart.incrementAndGet();
        }
        running.put(id, deadlineEpochMs);
    }

    /**
     * @param id the call id whose handler sent its answer.
     */
    public void answered(final long id)
    {
        if (running.remove(id) != null)
        {
            answered.incrementAndGet();
        }
    }

    /**
     * @param id the call id whose cancel callback ran.
     */
    public void cancelled(final long id)
    {
        if (running.remove(id) != null || awaitingCancelCallback.remove(id))
        {
            cancelled.incrementAndGet();
        }
    }

    /**
     * @param id the call id whose handler, coming to answer, found the call cancelled (counted apart until its cancel
     *           callback runs: the callback may come a moment after the call's cancelled flag is set).
     */
    public void foundCancelled(final long id)
    {
        // noted before it leaves 'running': a cancel callback running in between then finds it in one of the two
        awaitingCancelCallback.add(id);
        if (running.remove(id) == null)
        {
            awaitingCancelCallback.remove(id);
        }
    }

    /**
     * @return the ids of the calls whose handlers run now and whose client still waits for them.
     */
    public List<Long> running()
    {
        final long now = System.currentTimeMillis();
        final List<Long> ids = new ArrayList<>();
        running.forEach((id, deadline) ->
        {
            if (deadline >= now)
            {
                ids.add(id);
            }
        });
        return ids;
    }

    /**
     * @return one line: {@code started=N answered=N cancelled=N cancelled-unannounced=N expiredAtStart=N running=N}
     *         (cancelled-unannounced: found cancelled by the handler, cancel callback not run so far).
     */
    public String describe()
    {
        return "started=" + started.get() + " answered=" + answered.get() + " cancelled=" + cancelled.get() +
            " cancelled-unannounced=" + awaitingCancelCallback.size() + " expiredAtStart=" + expiredAtStart.get() +
            " running=" + running.size();
    }
}
