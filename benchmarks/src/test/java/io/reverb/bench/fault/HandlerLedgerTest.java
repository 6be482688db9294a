package io.reverb.bench.fault;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class HandlerLedgerTest
{
    @Test
    void shouldCountACallFoundCancelledAsUnannouncedOnlyUntilItsCancelCallbackRuns()
    {
        final HandlerLedger ledger = new HandlerLedger();
        final long future = System.currentTimeMillis() + 60_000;
        ledger.started(1, future);
        ledger.started(2, future);
        ledger.started(3, System.currentTimeMillis() - 1);
        assertThat(ledger.running()).containsExactlyInAnyOrder(1L, 2L);   // 3's client gave up already
        ledger.foundCancelled(1);
        assertThat(ledger.describe()).contains("cancelled=0 cancelled-unannounced=1 expiredAtStart=1 running=2");
        ledger.cancelled(1);                                                // the callback, a moment later
        ledger.cancelled(2);                                                // the callback first,
        ledger.foundCancelled(2);                                           // then the handler's own look
        ledger.answered(3);
        assertThat(ledger.describe())
            .isEqualTo("started=3 answered=1 cancelled=2 cancelled-unannounced=0 expiredAtStart=1 running=0");
    }
}
