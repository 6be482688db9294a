package io.reverb.rpc.internal;

import io.reverb.common.counters.CounterGroup;
import io.reverb.common.counters.CountersLayout;
import io.reverb.common.counters.ProcessCounters;
import io.reverb.rpc.StatusCode;
import org.agrona.concurrent.status.AtomicCounter;

/**
 * A server method's counters in the process's counters file ({@code reverb-stat} reads them, and so does the
 * server's {@code reverb.server.calls.active} gauge): calls started, calls finished by status (a counter per
 * status, allocated when the status first occurs), and calls in flight (sampled: started less finished).
 *
 * <p>Calls of one method start and end on several threads (each connection's), so the counters are incremented
 * atomically; nothing is allocated per call. A call is counted as started once it has been dispatched (after a handler
 * that answers at once has written its response: the increment is not on the response's path), so a call may be
 * counted as finished a moment before it is counted as started; calls in flight are never reported below zero.
 */
final class ServerMethodCounters
{
    private static final StatusCode[] CODES = StatusCode.values();

    private final CounterGroup group;
    private final AtomicCounter started;
    private final AtomicCounter[] finished = new AtomicCounter[CODES.length];

    ServerMethodCounters(final ProcessCounters counters, final String server, final String method)
    {
        this.group = counters.newGroup(CountersLayout.KIND_SERVER_METHOD, "server " + server + " " + method, 0);
        this.started = group.counter("calls started");
        finishedCounter(StatusCode.OK.value());
        group.gauge("calls in flight", this::inFlight);
    }

    void callStarted()
    {
        started.increment();
    }

    void callEnded(final int code)
    {
        AtomicCounter counter = code >= 0 && code < finished.length ? finished[code] : null;
        if (counter == null)
        {
            counter = finishedCounter(code);
        }
        counter.increment();
    }

    /** A status seen for the first time (or an unknown code, counted as UNKNOWN). */
    private synchronized AtomicCounter finishedCounter(final int code)
    {
        final int index = code >= 0 && code < finished.length ? code : StatusCode.UNKNOWN.value();
        AtomicCounter counter = finished[index];
        if (counter == null)
        {
            counter = group.counter("calls finished " + CODES[index].name());
            finished[index] = counter;
        }
        return counter;
    }

    /** @return calls started and not yet finished (0 while a finished call is not yet counted as started). */
    long inFlight()
    {
        long ended = 0;
        for (final AtomicCounter counter : finished)
        {
            if (counter != null)
            {
                ended += counter.get();
            }
        }
        return Math.max(0, started.get() - ended);
    }

    /** @return calls started. */
    long started()
    {
        return started.get();
    }

    /**
     * @param code a status code's value.
     * @return calls finished with it.
     */
    long finished(final int code)
    {
        final AtomicCounter counter = finished[code];
        return counter == null ? 0 : counter.get();
    }

    void close()
    {
        group.close();
    }
}
