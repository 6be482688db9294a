package io.reverb.rpc.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.tuple;

import com.sun.management.ThreadMXBean;
import io.reverb.common.counters.CounterValue;
import io.reverb.common.counters.ProcessCounters;
import io.reverb.rpc.StatusCode;
import java.lang.management.ManagementFactory;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.Test;

/**
 * A server method's counters: started, finished by status (each status's counter appears when it first occurs),
 * in flight; in the process's counters file; nothing allocated per call once a status has been seen.
 */
class ServerMethodCountersTest
{
    @Test
    void shouldCountCallsByStatusInTheFileWithoutAllocatingPerCall()
    {
        final ProcessCounters process = ProcessCounters.acquire();
        final String server = "inproc://server-method-counters-" + System.nanoTime();
        final ServerMethodCounters counters = new ServerMethodCounters(process, server, "pkg.Svc/Method");
        try
        {
            for (int i = 0; i < 10; i++)
            {
                counters.callStarted();
            }
            for (int i = 0; i < 6; i++)
            {
                counters.callEnded(StatusCode.OK.value());
            }
            counters.callEnded(StatusCode.NOT_FOUND.value());
            counters.callEnded(99); // not a status code: counted as UNKNOWN
            assertThat(counters.started()).isEqualTo(10);
            assertThat(counters.finished(StatusCode.OK.value())).isEqualTo(6);
            assertThat(counters.finished(StatusCode.NOT_FOUND.value())).isEqualTo(1);
            assertThat(counters.finished(StatusCode.UNKNOWN.value())).isEqualTo(1);
            assertThat(counters.finished(StatusCode.CANCELLED.value())).isZero();
            assertThat(counters.inFlight()).isEqualTo(2);

            final List<CounterValue> inFile = process.view().counters().stream()
                .filter(c -> c.group().equals("server " + server + " pkg.Svc/Method")).toList();
            assertThat(inFile).extracting(CounterValue::name, CounterValue::value).containsExactly(
                tuple("calls started", 10L),
                tuple("calls finished OK", 6L),
                tuple("calls in flight", inFile.get(2).value()), // a gauge, sampled a few times a second: below
                tuple("calls finished NOT_FOUND", 1L),
                tuple("calls finished UNKNOWN", 1L));
            // The gauge is written by the process's sampler once a second: whatever it read while the calls above
            // ran (0 to 10), it reads 2 at its next sample. Wait for that sample (30 s: many sampling periods).
            long sampled = inFile.get(2).value();
            final long giveUp = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (sampled != 2 && System.nanoTime() - giveUp < 0)
            {
                LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(5));
                sampled = inFlightInFile(process, server);
            }
            assertThat(sampled).as("in flight, once the sampler saw the calls").isEqualTo(2L);

            final ThreadMXBean threads = (ThreadMXBean)ManagementFactory.getThreadMXBean();
            calls(counters, 10_000);
            // the fewest bytes of five rounds: a round meeting a JIT event on a loaded machine allocates once
            long fewest = Long.MAX_VALUE;
            for (int round = 0; round < 5; round++)
            {
                final long before = threads.getCurrentThreadAllocatedBytes();
                calls(counters, 100_000);
                fewest = Math.min(fewest, threads.getCurrentThreadAllocatedBytes() - before);
            }
            assertThat(fewest).as("bytes allocated by 100,000 calls (fewest of five rounds)").isLessThan(1_000);
            assertThat(counters.started()).isEqualTo(510_010);
        }
        finally
        {
            counters.close();
            process.release();
        }
        assertThat(process.view().counters()).noneMatch(c -> c.group().contains(server));
    }

    private static long inFlightInFile(final ProcessCounters process, final String server)
    {
        return process.view().counters().stream()
            .filter(c -> c.group().equals("server " + server + " pkg.Svc/Method") && c.name().equals("calls in flight"))
            .mapToLong(CounterValue::value).findFirst().orElse(-1L);
    }

    private static void calls(final ServerMethodCounters counters, final int times)
    {
        for (int i = 0; i < times; i++)
        {
            counters.callStarted();
            counters.callEnded(i % 7 == 0 ? StatusCode.NOT_FOUND.value() : StatusCode.OK.value());
        }
    }
}
