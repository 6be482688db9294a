package io.reverb.rpc.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class KeepAliveEnforcerTest
{
    private static final long SECOND = TimeUnit.SECONDS.toNanos(1);

    @Test
    void shouldAcceptPingsSpacedAtLeastMinTimeApart()
    {
        final KeepAliveEnforcer enforcer = new KeepAliveEnforcer(10, TimeUnit.SECONDS, false, 0);
        for (int i = 1; i <= 100; i++)
        {
            assertThat(enforcer.onPing(i * 10 * SECOND, true)).isTrue();
        }
        assertThat(enforcer.strikes()).isZero();
    }

    @Test
    void shouldCloseAfterTheThirdPingTooSoon()
    {
        final KeepAliveEnforcer enforcer = new KeepAliveEnforcer(10, TimeUnit.SECONDS, false, 0);
        assertThat(enforcer.onPing(SECOND, true)).isTrue(); // the first one is always fine
        assertThat(enforcer.onPing(2 * SECOND, true)).isTrue(); // strike 1
        assertThat(enforcer.onPing(3 * SECOND, true)).isTrue(); // strike 2
        assertThat(enforcer.onPing(4 * SECOND, true)).isFalse(); // strike 3: GOAWAY
    }

    @Test
    void shouldCountPingsWithoutCallsUnlessPermitted()
    {
        final KeepAliveEnforcer strict = new KeepAliveEnforcer(1, TimeUnit.SECONDS, false, 0);
        final KeepAliveEnforcer lenient = new KeepAliveEnforcer(1, TimeUnit.SECONDS, true, 0);
        for (int i = 1; i <= 3; i++)
        {
            strict.onPing(i * 60 * SECOND, false);
            assertThat(lenient.onPing(i * 60 * SECOND, false)).isTrue();
        }
        assertThat(strict.onPing(240 * SECOND, false)).isFalse();
    }

    @Test
    void shouldForgiveStrikesOnceDataIsSent()
    {
        final KeepAliveEnforcer enforcer = new KeepAliveEnforcer(10, TimeUnit.SECONDS, false, 0);
        enforcer.onPing(SECOND, true);
        enforcer.onPing(2 * SECOND, true);
        enforcer.onPing(3 * SECOND, true);
        enforcer.onDataSent();
        assertThat(enforcer.onPing(4 * SECOND, true)).isTrue();
        assertThat(enforcer.strikes()).isZero();
    }

    @Test
    void shouldJitterTheMaxConnectionAgeByTenPercent()
    {
        assertThat(MaxConnectionAge.jitteredAgeNanos(1000, 0.0)).isEqualTo(900);
        assertThat(MaxConnectionAge.jitteredAgeNanos(1000, 0.5)).isEqualTo(1000);
        assertThat(MaxConnectionAge.jitteredAgeNanos(1000, 0.999)).isEqualTo(1099);
        assertThat(MaxConnectionAge.jitteredAgeNanos(Long.MAX_VALUE, 0.3)).isEqualTo(Long.MAX_VALUE);
    }
}
