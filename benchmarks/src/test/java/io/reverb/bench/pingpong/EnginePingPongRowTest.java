package io.reverb.bench.pingpong;

import static org.assertj.core.api.Assertions.assertThat;

import io.reverb.rdma.engine.PollingMode;
import org.junit.jupiter.api.Test;

class EnginePingPongRowTest
{
    @Test
    void shouldMakeEachRowOneStringWithItsLineSeparatorSoThatItIsWrittenInOneCall()
    {
        final String row = EnginePingPong.row(PollingMode.BUSY, 143.1, 19906.56, 44662.78, 65536, 2110, 0, 0.4,
            199.98, 0.03, 0);

        assertThat(row).endsWith(System.lineSeparator());
        assertThat(row.strip()).doesNotContain("\n").doesNotContain("\r");
        // reverb-rdma-check reads the mode, p50 and p99 from the row's first three fields
        assertThat(row.strip().split(" +")).hasSize(11).startsWith("BUSY", "143.10", "19906.56");
    }
}
