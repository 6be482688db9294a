package io.reverb.rdma.verbs;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** Issue 13, item 9: provider refusals are one line each, rate-limited per kind, and all counted. */
class RefusalLogTest
{
    @Test
    void shouldLogABurstThenOneLinePerIntervalWithTheCountLeftOut()
    {
        final List<String> lines = new ArrayList<>();
        final AtomicLong now = new AtomicLong();
        final RefusalLog log = new RefusalLog("tcp://0.0.0.0:7000", (kind, line) -> lines.add(line), now::get);
        for (int i = 0; i < 2_000; i++)
        {
            log.refused("malformed", "10.0.0." + (i % 250) + ":4000", "not a tcp:// verbs peer (bad magic)");
        }
        assertThat(log.refused()).isEqualTo(2_000);
        assertThat(lines).hasSize(RefusalLog.BURST);
        assertThat(lines.get(0)).isEqualTo(
            "tcp://0.0.0.0:7000 refused a connection from 10.0.0.0:4000: not a tcp:// verbs peer (bad magic)");

        now.addAndGet(RefusalLog.INTERVAL_NANOS);
        log.refused("malformed", "10.0.0.1:4000", "again");
        assertThat(lines).hasSize(RefusalLog.BURST + 1);
        assertThat(lines.get(RefusalLog.BURST)).endsWith("again (" + (2_000 - RefusalLog.BURST) +
            " more like this in the last 10 s were not logged)");

        // Another kind has its own budget.
        log.refused("deadline", null, "no complete handshake within 2000 ms");
        assertThat(lines).hasSize(RefusalLog.BURST + 2);
        assertThat(lines.get(RefusalLog.BURST + 1)).doesNotContain(" from ");
    }
}
