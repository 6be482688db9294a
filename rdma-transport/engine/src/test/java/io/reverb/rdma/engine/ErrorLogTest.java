package io.reverb.rdma.engine;

import static org.assertj.core.api.Assertions.assertThat;

import io.reverb.common.LogLimiter;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class ErrorLogTest
{
    private long now = 1_000;
    private final List<String> lines = new ArrayList<>();
    private final List<Throwable> stacks = new ArrayList<>();
    private final ErrorLog log = new ErrorLog((line, t) ->
    {
        lines.add(line);
        stacks.add(t);
    }, () -> now);

    @Test
    void shouldLogABurstOfRefusalsThenOneLinePerIntervalSayingHowManyWereLeftOut()
    {
        for (int i = 0; i < 2_000; i++)
        {
            log.accept(new HandshakeException(HandshakeException.Reason.AUTHENTICATION, "refused connection from peer" + i));
        }
        assertThat(lines).hasSize(LogLimiter.BURST);
        assertThat(stacks).containsOnlyNulls(); // a refusal is the peer's doing: no stack trace
        now += LogLimiter.INTERVAL_NANOS;
        log.accept(new HandshakeException(HandshakeException.Reason.AUTHENTICATION, "refused connection from late"));
        assertThat(lines).hasSize(LogLimiter.BURST + 1);
        assertThat(lines.get(LogLimiter.BURST)).contains("refused connection from late")
            .contains((2_000 - LogLimiter.BURST) + " more like this");
    }

    @Test
    void shouldRateLimitEachKindOnItsOwnAndKeepStackTracesOfUnexpectedErrors()
    {
        for (int i = 0; i < 100; i++)
        {
            log.accept(new HandshakeException(HandshakeException.Reason.GEOMETRY, "bad geometry " + i));
            log.accept(new EngineException("poller failed", new IOException("boom")));
        }
        assertThat(lines).hasSize(2 * LogLimiter.BURST);
        assertThat(stacks.stream().filter(t -> t instanceof EngineException)).hasSize(LogLimiter.BURST);
        now += TimeUnit.SECONDS.toNanos(1);
        log.accept(new EngineException("poller failed", new IOException("boom")));
        assertThat(lines).as("still inside the interval").hasSize(2 * LogLimiter.BURST);
    }
}
