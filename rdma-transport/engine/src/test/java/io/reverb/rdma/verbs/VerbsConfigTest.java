package io.reverb.rdma.verbs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** A system property is only the default of a field: read once by {@link VerbsConfig#defaults()}, never later. */
class VerbsConfigTest
{
    @AfterEach
    void clearProperties()
    {
        System.clearProperty(VerbsConfig.TCP_POLLER_READS_PROP);
        System.clearProperty(VerbsConfig.TCP_BUSY_POLL_MICROS_PROP);
        System.clearProperty(VerbsConfig.TCP_ACK_HOLD_MICROS_PROP);
        System.clearProperty(VerbsConfig.RDMA_LOCAL_ADDRESS_PROP);
        System.clearProperty(VerbsConfig.CONNECT_TIMEOUT_MS_PROP);
    }

    @Test
    void shouldTakeTheTcpDefaultsFromTheSystemPropertiesOnceAndKeepThem()
    {
        clearProperties();
        final VerbsConfig before = VerbsConfig.defaults();
        assertThat(before.tcpPollerReads()).isTrue();
        assertThat(before.tcpBusyPollNanos()).isZero();
        assertThat(before.tcpAckHoldNanos()).isEqualTo(TimeUnit.MICROSECONDS.toNanos(VerbsConfig.TCP_ACK_HOLD_MICROS_DEFAULT));
        assertThat(before.rdmaLocalAddress()).isNull();

        System.setProperty(VerbsConfig.TCP_POLLER_READS_PROP, "false");
        System.setProperty(VerbsConfig.TCP_BUSY_POLL_MICROS_PROP, "200");
        System.setProperty(VerbsConfig.TCP_ACK_HOLD_MICROS_PROP, "0");
        System.setProperty(VerbsConfig.RDMA_LOCAL_ADDRESS_PROP, " 10.0.0.7 ");
        final VerbsConfig after = VerbsConfig.defaults();
        assertThat(after.tcpPollerReads()).isFalse();
        assertThat(after.tcpBusyPollNanos()).isEqualTo(200_000);
        assertThat(after.tcpAckHoldNanos()).isZero();
        assertThat(after.rdmaLocalAddress()).isEqualTo("10.0.0.7");
        // a config made before the properties changed keeps what it read
        assertThat(before.tcpPollerReads()).isTrue();
        assertThat(before.tcpBusyPollNanos()).isZero();
        // a copy keeps every field it does not change
        final VerbsConfig copy = after.withConnectTimeoutNanos(1_000);
        assertThat(copy.tcpPollerReads()).isFalse();
        assertThat(copy.tcpBusyPollNanos()).isEqualTo(200_000);
        assertThat(copy.rdmaLocalAddress()).isEqualTo("10.0.0.7");
        assertThat(copy.connectTimeoutNanos()).isEqualTo(1_000);
        assertThat(copy.withRdmaLocalAddress(null).rdmaLocalAddress()).isNull();
        assertThat(copy.withTcpPollerReads(true).tcpPollerReads()).isTrue();
    }

    @Test
    void shouldRefuseBadValuesNamingTheProperty()
    {
        System.setProperty(VerbsConfig.TCP_POLLER_READS_PROP, "yes");
        assertThatThrownBy(VerbsConfig::defaults).isInstanceOf(IllegalArgumentException.class)
            .hasMessageContaining(VerbsConfig.TCP_POLLER_READS_PROP);
        System.clearProperty(VerbsConfig.TCP_POLLER_READS_PROP);

        System.setProperty(VerbsConfig.TCP_BUSY_POLL_MICROS_PROP, "lots");
        assertThatThrownBy(VerbsConfig::defaults).isInstanceOf(IllegalArgumentException.class)
            .hasMessageContaining(VerbsConfig.TCP_BUSY_POLL_MICROS_PROP);
        System.setProperty(VerbsConfig.TCP_BUSY_POLL_MICROS_PROP, "2000000");
        assertThatThrownBy(VerbsConfig::defaults).isInstanceOf(IllegalArgumentException.class)
            .hasMessageContaining(VerbsConfig.TCP_BUSY_POLL_MICROS_PROP);
        System.clearProperty(VerbsConfig.TCP_BUSY_POLL_MICROS_PROP);

        System.setProperty(VerbsConfig.CONNECT_TIMEOUT_MS_PROP, "5s");
        assertThatThrownBy(VerbsConfig::defaults).isInstanceOf(IllegalArgumentException.class)
            .hasMessageContaining(VerbsConfig.CONNECT_TIMEOUT_MS_PROP);
        System.setProperty(VerbsConfig.CONNECT_TIMEOUT_MS_PROP, "750");
        assertThat(VerbsConfig.defaults().connectTimeoutNanos()).isEqualTo(750_000_000L);
        System.clearProperty(VerbsConfig.CONNECT_TIMEOUT_MS_PROP);

        assertThatThrownBy(() -> VerbsConfig.defaults().withTcpAckHoldNanos(-1))
            .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("tcpAckHoldNanos");
        assertThatThrownBy(() -> VerbsConfig.defaults().withTcpBusyPollNanos(VerbsConfig.MAX_TCP_WAIT_NANOS + 1))
            .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("tcpBusyPollNanos");
    }
}
