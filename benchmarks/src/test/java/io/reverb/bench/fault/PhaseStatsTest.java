package io.reverb.bench.fault;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The fault suite's rules, judged from counts fed by hand (no network, no clock: times are given).
 */
class PhaseStatsTest
{
    private static final long MS = TimeUnit.MILLISECONDS.toNanos(1);
    private static final PhaseStats.Rules RULES = new PhaseStats.Rules(500 * MS, 5_000 * MS, true);
    private static final PhaseStats.Rules LENIENT_GRACE = new PhaseStats.Rules(500 * MS, 5_000 * MS, false);

    @Test
    void shouldPassASteadyScenarioWhereEveryCallSucceeded()
    {
        final PhaseStats steady = new PhaseStats("steady", PhaseStats.Kind.STEADY);
        for (int i = 0; i < 10; i++)
        {
            steady.callStarted();
            steady.callEnded(PhaseStats.OK, i, -1_000 * MS, i);
        }
        final PhaseStats.Verdict verdict = steady.verdict(RULES, id -> null);
        assertThat(verdict.broken()).isEmpty();
        assertThat(verdict.calls()).isEqualTo(10);
        assertThat(verdict.ok()).isEqualTo(10);
        assertThat(verdict.row()).contains("PASS");
    }

    @Test
    void shouldFailASteadyScenarioWithAFailedCallOrWithNoCall()
    {
        final PhaseStats steady = new PhaseStats("steady", PhaseStats.Kind.STEADY);
        steady.callStarted();
        steady.callEnded(PhaseStats.UNAVAILABLE, 0, -1_000 * MS, 0);
        assertThat(steady.verdict(RULES, id -> null).broken()).containsExactly("1 calls failed with nothing wrong");
        assertThat(new PhaseStats("idle", PhaseStats.Kind.STEADY).verdict(RULES, id -> null).broken())
            .containsExactly("no call was made");
    }

    @Test
    void shouldFailOnAStatusOtherThanDeadlineExceededOrUnavailable()
    {
        final PhaseStats fault = recovered(new PhaseStats("crash", PhaseStats.Kind.FAULT), 100 * MS);
        fault.callStarted();
        fault.callEnded(13, 0, 0, 0);
        fault.callStarted();
        fault.callEnded(PhaseStats.DEADLINE_EXCEEDED, 0, 3 * MS, 0);
        final PhaseStats.Verdict verdict = fault.verdict(RULES, id -> null);
        assertThat(verdict.other()).isEqualTo(1);
        assertThat(verdict.deadline()).isEqualTo(1);
        assertThat(verdict.broken()).containsExactly("failures other than DEADLINE_EXCEEDED/UNAVAILABLE: {13=1}");
    }

    @Test
    void shouldFailWhenACallOutlivesItsDeadlineByMoreThanTheMarginEndedOrStillRunning()
    {
        final PhaseStats ended = recovered(new PhaseStats("link-long", PhaseStats.Kind.FAULT), 0);
        ended.callStarted();
        ended.callEnded(PhaseStats.DEADLINE_EXCEEDED, 0, 501 * MS, 0);
        assertThat(ended.verdict(RULES, id -> null).broken()).containsExactly("a call outlived its deadline by 501 ms");

        final PhaseStats running = recovered(new PhaseStats("freeze", PhaseStats.Kind.FAULT), 0);
        running.callStarted();
        running.overrun(2_000 * MS);
        assertThat(running.verdict(RULES, id -> null).broken()).containsExactly("a call outlived its deadline by 2000 ms");

        final PhaseStats within = recovered(new PhaseStats("freeze", PhaseStats.Kind.FAULT), 0);
        within.callStarted();
        within.callEnded(PhaseStats.DEADLINE_EXCEEDED, 0, 500 * MS, 0);
        assertThat(within.verdict(RULES, id -> null).passed()).isTrue();
    }

    @Test
    void shouldTimeRecoveryFromTheRestoreToTheFirstSuccessAfterIt()
    {
        final PhaseStats fault = new PhaseStats("crash", PhaseStats.Kind.FAULT);
        fault.callStarted();
        fault.callEnded(PhaseStats.OK, 0, -1_000 * MS, 1_000 * MS);             // before the restore: not a recovery
        fault.restored(10_000 * MS);
        fault.callStarted();
        fault.callEnded(PhaseStats.OK, 9_000 * MS, -1_000 * MS, 10_050 * MS);   // started before it: not a recovery
        fault.callStarted();
        fault.callEnded(PhaseStats.UNAVAILABLE, 10_000 * MS, -1_000 * MS, 10_100 * MS);
        fault.callStarted();
        fault.callEnded(PhaseStats.OK, 10_500 * MS, -1_000 * MS, 12_000 * MS);
        fault.callStarted();
        fault.callEnded(PhaseStats.OK, 10_200 * MS, -1_000 * MS, 11_500 * MS);  // ended first although reported later
        final PhaseStats.Verdict verdict = fault.verdict(RULES, id -> null);
        assertThat(verdict.recoveryNanos()).isEqualTo(1_500 * MS);
        assertThat(verdict.broken()).isEmpty();
    }

    @Test
    void shouldFailWhenNoCallSucceedsSoonOrAtAllAfterTheRestore()
    {
        final PhaseStats late = new PhaseStats("link-long", PhaseStats.Kind.FAULT);
        late.restored(0);
        late.callStarted();
        late.callEnded(PhaseStats.OK, 0, -1_000 * MS, 5_001 * MS);
        assertThat(late.verdict(RULES, id -> null).broken()).containsExactly("first success 5001 ms after the server was back");

        final PhaseStats never = new PhaseStats("link-long", PhaseStats.Kind.FAULT);
        never.callStarted();
        never.callEnded(PhaseStats.OK, 0, -1_000 * MS, 0);
        never.restored(1);
        assertThat(never.verdict(RULES, id -> null).broken())
            .containsExactly("no call succeeded after the server was reachable again");

        final PhaseStats unrestored = new PhaseStats("crash", PhaseStats.Kind.FAULT);
        unrestored.callStarted();
        unrestored.callEnded(PhaseStats.OK, 0, -1_000 * MS, 0);
        assertThat(unrestored.verdict(RULES, id -> null).broken())
            .containsExactly("the server was never reported reachable again");
    }

    @Test
    void shouldFailWhenCallsKeepFailingLongAfterTheRestore()
    {
        final PhaseStats fault = recovered(new PhaseStats("graceful", PhaseStats.Kind.FAULT), 0);
        fault.callStarted();
        fault.callEnded(PhaseStats.UNAVAILABLE, 4_000 * MS, -1_000 * MS, 4_001 * MS);   // within the recovery time
        assertThat(fault.verdict(RULES, id -> null).broken()).isEmpty();
        fault.callStarted();
        fault.callEnded(PhaseStats.UNAVAILABLE, 6_000 * MS, -1_000 * MS, 6_001 * MS);
        assertThat(fault.verdict(RULES, id -> null).broken())
            .containsExactly("1 calls started more than 5000 ms after the server was back failed");
    }

    @Test
    void shouldRequireTheCallsInFlightAtAGracefulShutdownToEndOk()
    {
        final Map<Long, Integer> outcomes = Map.of(1L, PhaseStats.OK, 2L, PhaseStats.OK, 3L, PhaseStats.UNAVAILABLE);
        final PhaseStats graceful = recovered(new PhaseStats("graceful", PhaseStats.Kind.GRACEFUL), 0);
        graceful.callStarted();
        graceful.inflightAtShutdown(List.of(1L, 2L));
        PhaseStats.Verdict verdict = graceful.verdict(RULES, outcomes::get);
        assertThat(verdict.broken()).isEmpty();
        assertThat(verdict.row()).contains("2/2");

        graceful.inflightAtShutdown(List.of(1L, 3L, 4L));          // 3 failed, 4 never ended
        verdict = graceful.verdict(RULES, outcomes::get);
        assertThat(verdict.broken()).containsExactly("2 of 3 calls in flight at the shutdown did not end OK");

        graceful.inflightAtShutdown(List.of());
        assertThat(graceful.verdict(RULES, outcomes::get).broken())
            .containsExactly("no call was in flight at the shutdown (the rule was not exercised)");

        final PhaseStats unreported = recovered(new PhaseStats("graceful", PhaseStats.Kind.GRACEFUL), 0);
        unreported.callStarted();
        assertThat(unreported.verdict(RULES, outcomes::get).broken())
            .containsExactly("the server never reported its calls in flight at the shutdown");
    }

    @Test
    void shouldCountEveryFailedCallAcrossAGracefulShutdownUnlessToldNotTo()
    {
        final PhaseStats graceful = recovered(new PhaseStats("graceful", PhaseStats.Kind.GRACEFUL), 0);
        graceful.inflightAtShutdown(List.of(1L));
        graceful.callStarted();
        graceful.callEnded(PhaseStats.UNAVAILABLE, 0, -1_000 * MS, 0);
        assertThat(graceful.verdict(RULES, id -> PhaseStats.OK).broken())
            .containsExactly("1 calls failed across the graceful shutdown (not retried on the replacement)");
        assertThat(graceful.verdict(LENIENT_GRACE, id -> PhaseStats.OK).broken()).isEmpty();
    }

    /** A scenario whose server came back at {@code at}, with one call that succeeded right then. */
    private static PhaseStats recovered(final PhaseStats phase, final long at)
    {
        phase.restored(at);
        phase.callStarted();
        phase.callEnded(PhaseStats.OK, at, -1_000 * MS, at);
        return phase;
    }
}
