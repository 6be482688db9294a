package io.reverb.bench.fault;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.concurrent.CountDownLatch;
import org.junit.jupiter.api.Test;

class ThreadCensusTest
{
    @Test
    void shouldNameEachThreadBeyondTheBaselineExceptProcessWideAndEngineThreads()
    {
        final ThreadCensus before = ThreadCensus.of(List.of("main", "grpc-default-worker-ELG-1-1", "pool-1"));
        final ThreadCensus after = ThreadCensus.of(List.of("main", "grpc-default-worker-ELG-1-1",
            "grpc-default-worker-ELG-1-1", "pool-1", "parallel-1", "reverb-deadline-timer", "Attach Listener",
            "fault-driver-scheduler", "reverb-tcp-nic-1", "reverb-tcp-poller-0", "reverb-connection-7"));
        assertThat(after.leftSince(before)).containsExactly("grpc-default-worker-ELG-1-1", "reverb-connection-7");
        assertThat(after.engineThreads(before)).containsExactly("reverb-tcp-nic-1", "reverb-tcp-poller-0");
        assertThat(before.leftSince(after)).isEmpty();
    }

    @Test
    void shouldSeeALiveThreadLeftAndItsEnd() throws Exception
    {
        final ThreadCensus baseline = ThreadCensus.take();
        final CountDownLatch release = new CountDownLatch(1);
        final Thread lingering = new Thread(() ->
        {
            try
            {
                release.await();
            }
            catch (final InterruptedException ex)
            {
                Thread.currentThread().interrupt();
            }
        }, "census-test-lingering");
        lingering.start();
        assertThat(ThreadCensus.take().leftSince(baseline)).contains("census-test-lingering");
        release.countDown();
        assertThat(ThreadCensus.awaitLeftSince(baseline, 30_000)).doesNotContain("census-test-lingering");
    }
}
