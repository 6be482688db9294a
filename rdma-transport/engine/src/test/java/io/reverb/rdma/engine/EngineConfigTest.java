package io.reverb.rdma.engine;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

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
}
