package io.reverb.bench.pingpong;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The ping-pong tool runs and measures every round trip (no figures are asserted). */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class TcpPingPongTest
{
    @Test
    void shouldMeasureEveryRoundTrip() throws Exception
    {
        final long[] rtts = TcpPingPong.run(200, 50, 64);
        assertThat(rtts).hasSize(200);
        for (final long rtt : rtts)
        {
            assertThat(rtt).isPositive();
        }
    }
}
