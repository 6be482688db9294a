package io.reverb.rpc.lb;

import io.reverb.rpc.ConnectivityState;
import io.reverb.rpc.health.HealthProtocol;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class SubchannelReadinessTest
{
    @Test
    void shouldBeReadyWhenConnectedWithoutHealthChecking()
    {
        final SubchannelReadiness readiness = new SubchannelReadiness(false);
        assertThat(readiness.onTransportState(ConnectivityState.CONNECTING)).isEqualTo(ConnectivityState.CONNECTING);
        assertThat(readiness.onTransportState(ConnectivityState.READY)).isEqualTo(ConnectivityState.READY);
        assertThat(readiness.onHealth(HealthProtocol.NOT_SERVING)).isEqualTo(ConnectivityState.READY);
    }

    @Test
    void shouldWaitForServingAndStopPickingWhenNotServing()
    {
        final SubchannelReadiness readiness = new SubchannelReadiness(true);
        assertThat(readiness.onTransportState(ConnectivityState.READY)).isEqualTo(ConnectivityState.CONNECTING);
        assertThat(readiness.onHealth(HealthProtocol.SERVING)).isEqualTo(ConnectivityState.READY);
        assertThat(readiness.onHealth(HealthProtocol.NOT_SERVING)).isEqualTo(ConnectivityState.TRANSIENT_FAILURE);
        assertThat(readiness.onHealth(HealthProtocol.SERVICE_UNKNOWN)).isEqualTo(ConnectivityState.TRANSIENT_FAILURE);
        assertThat(readiness.onHealth(HealthProtocol.SERVING)).isEqualTo(ConnectivityState.READY);
    }

    @Test
    void shouldTreatAReplicaWithoutHealthServiceAsServing()
    {
        final SubchannelReadiness readiness = new SubchannelReadiness(true);
        readiness.onTransportState(ConnectivityState.READY);
        assertThat(readiness.onHealthUnimplemented()).isEqualTo(ConnectivityState.READY);
    }

    @Test
    void shouldStopPickingAfterGoAwayAndForgetItOnTheNextConnection()
    {
        final SubchannelReadiness readiness = new SubchannelReadiness(true);
        readiness.onTransportState(ConnectivityState.READY);
        readiness.onHealth(HealthProtocol.SERVING);
        assertThat(readiness.onGoAway()).isEqualTo(ConnectivityState.IDLE);
        assertThat(readiness.onTransportState(ConnectivityState.CONNECTING)).isEqualTo(ConnectivityState.CONNECTING);
        assertThat(readiness.onTransportState(ConnectivityState.READY)).isEqualTo(ConnectivityState.CONNECTING); // health again
        assertThat(readiness.onHealth(HealthProtocol.SERVING)).isEqualTo(ConnectivityState.READY);
    }
}
