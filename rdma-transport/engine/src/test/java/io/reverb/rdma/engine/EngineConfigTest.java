package io.reverb.rdma.engine;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.reverb.rdma.verbs.VerbsConfig;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.util.Arrays;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** Engine configuration: validated and completed in one place, then frozen. */
class EngineConfigTest
{
    @Test
    void shouldRejectAnInvalidConfigurationInOnePlace()
    {
        assertThatThrownBy(() -> new EngineConfig().receiveSlots(2).conclude())
            .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("receiveSlots");
        assertThatThrownBy(() -> new EngineConfig().maxInboundMessageSize(1 << 26).rendezvousPoolBytes(1 << 20).conclude())
            .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("rendezvousPoolBytes");
        assertThatThrownBy(() -> new EngineConfig().meterRegistry("not a registry").conclude())
            .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("MeterRegistry");
        final EngineConfig concluded = new EngineConfig().conclude();
        assertThatThrownBy(() -> concluded.eagerLimit(10)).isInstanceOf(IllegalStateException.class);
        assertThat(concluded.pollingMode()).isEqualTo(PollingMode.ADAPTIVE);
        assertThat(concluded.pollerCount()).isEqualTo(1);
    }

    /**
     * A copy keeps every setting (a transport's shared engine is opened from a copy: a setting it dropped, as
     * maxConnections once was, silently did nothing over RPC). Every field but the frozen flag is compared, so a
     * setting added later and left out of copy() fails here.
     */
    @Test
    void shouldCopyEverySetting() throws IllegalAccessException
    {
        final EngineConfig config = new EngineConfig().receiveSlots(64).messagesPerPoll(7).eagerLimit(2048).sendSlots(32)
            .rendezvousMinClass(128 * 1024).rendezvousPoolBytes(256L << 20).rendezvousMemoryBytes(512L << 20)
            .rendezvousWriteTimeoutNanos(TimeUnit.SECONDS.toNanos(7)).directWrite(false)
            .maxInboundMessageSize(1 << 20).maxOutboundMessageSize(1 << 21).pollingMode(PollingMode.BUSY).pollerCount(2)
            .authToken(new byte[32]).maxConnections(9).maxUnprovenPerPeer(3).errorHandler(t -> { })
            .closeTimeoutNanos(TimeUnit.SECONDS.toNanos(3)).pollerStallThresholdNanos(TimeUnit.SECONDS.toNanos(2))
            .idleTask(() -> false).idleTaskDelayNanos(TimeUnit.MILLISECONDS.toNanos(3)).name("copied")
            .announceAtClaim(!new EngineConfig().announceAtClaim()).verbsConfig(VerbsConfig.defaults())
            .meterRegistry(new SimpleMeterRegistry()).adaptiveSpin(1_000, 2_000, 3_000);
        final EngineConfig copy = config.copy();
        final EngineConfig defaults = new EngineConfig();
        int compared = 0;
        for (final Field field : EngineConfig.class.getDeclaredFields())
        {
            if (Modifier.isStatic(field.getModifiers()) || field.getName().equals("concluded"))
            {
                continue;
            }
            field.setAccessible(true);
            final Object set = field.get(config);
            final Object copied = field.get(copy);
            if (!field.getName().equals("tls"))
            {
                assertThat(set).as("this test sets every setting away from its default: set %s too", field.getName())
                    .isNotEqualTo(field.get(defaults));
            }
            if (set instanceof byte[])
            {
                assertThat((byte[])copied).as(field.getName()).isEqualTo((byte[])set);
            }
            else
            {
                assertThat(copied).as(field.getName()).isEqualTo(set);
            }
            compared++;
        }
        assertThat(compared).isGreaterThan(20);
        assertThat(copy.maxConnections()).isEqualTo(9).isNotEqualTo(defaults.maxConnections());
        assertThat(copy.maxUnprovenPerPeer()).isEqualTo(3);
        assertThat(Arrays.asList(copy.pollingMode(), copy.name())).containsExactly(PollingMode.BUSY, "copied");
    }
}
