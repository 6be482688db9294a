package io.reverb.bench;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

class ThreadCpuTest
{
    @TempDir
    Path proc;

    private void task(final long pid, final int tid, final String comm, final String schedstat) throws IOException
    {
        final Path dir = proc.resolve(pid + "/task/" + tid);
        Files.createDirectories(dir);
        Files.writeString(dir.resolve("comm"), comm + "\n");
        Files.writeString(dir.resolve("schedstat"), schedstat + "\n");
    }

    @Test
    void splitsAProcesssCpuBetweenReverbTheHarnessAndTheJvmByThreadName() throws IOException
    {
        task(42, 42, "java", "1000000 0 5");
        task(42, 43, "VM Periodic Tas", "2000000 10 100");
        task(42, 44, "reverb-counters", "3000000 0 7");
        task(42, 45, "reverb-bench-se", "500000 0 1");
        final Map<String, ThreadCpu.Sample> before = ThreadCpu.snapshot(proc, 42);
        assertEquals(4, before.size());

        task(42, 43, "VM Periodic Tas", "12000000 10 300");
        task(42, 44, "reverb-counters", "3400000 0 17");
        task(42, 46, "reverb-shm-adap", "100000 0 2"); // started in between: counts from zero
        Files.delete(proc.resolve("42/task/45/comm")); // ended in between: left out
        final List<ThreadCpu.Delta> deltas = ThreadCpu.between(before, ThreadCpu.snapshot(proc, 42));

        assertEquals(List.of(
            new ThreadCpu.Delta("VM Periodic Tas", ThreadCpu.Owner.JVM, 10_000_000, 200),
            new ThreadCpu.Delta("reverb-counters", ThreadCpu.Owner.REVERB, 400_000, 10),
            new ThreadCpu.Delta("reverb-shm-adap", ThreadCpu.Owner.REVERB, 100_000, 2),
            new ThreadCpu.Delta("java", ThreadCpu.Owner.HARNESS, 0, 0)), deltas);
        // 10 s between the snapshots
        assertEquals("Reverb 0.01% (reverb-counters 0.00%, reverb-shm-adap 0.00%; 1.2 wake-ups/s), " +
            "harness 0.00% (0.0 wake-ups/s), JVM 0.10% (VM Periodic Tas 0.10%; 20.0 wake-ups/s)",
            ThreadCpu.summary(deltas, 10_000_000_000L, 3));
    }

    @Test
    void aProcessWithoutTasksOrUnreadableCountersGivesNothingToSplit() throws IOException
    {
        assertTrue(ThreadCpu.snapshot(proc, 7).isEmpty());
        task(8, 8, "java", "not a number");
        task(8, 9, "reverb-x", "12");
        assertTrue(ThreadCpu.snapshot(proc, 8).isEmpty());
    }

    @Test
    void theJvmsOwnThreadsAndTheServersMainAreNotReverbs()
    {
        assertEquals(ThreadCpu.Owner.JVM, new ThreadCpu.Sample("G1 Service", 0, 0).owner());
        assertEquals(ThreadCpu.Owner.JVM, new ThreadCpu.Sample("C2 CompilerThre", 0, 0).owner());
        assertEquals(ThreadCpu.Owner.HARNESS, new ThreadCpu.Sample("java", 0, 0).owner());
        assertEquals(ThreadCpu.Owner.HARNESS, new ThreadCpu.Sample("reverb-bench-se", 0, 0).owner());
        assertEquals(ThreadCpu.Owner.REVERB, new ThreadCpu.Sample("reverb-tcp-poll", 0, 0).owner());
    }
}
