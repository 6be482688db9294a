package io.reverb.rpc.internal;

import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.reverb.rpc.MethodDescriptor;
import io.reverb.rpc.RpcServer;
import io.reverb.rpc.Status;
import io.reverb.rpc.TestService;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/** Meters per method name, bounded: a server that serves made-up names (a fallback registry) adds no series without end. */
class MicrometerCallMetricsTest
{
    private static Set<String> methodTags(final SimpleMeterRegistry registry, final String meter)
    {
        return registry.find(meter).meters().stream().map(m -> m.getId().getTag("method")).collect(Collectors.toSet());
    }

    @Test
    void shouldRecordNamesBeyondTheBoundUnderTheSharedOtherName()
    {
        final SimpleMeterRegistry registry = new SimpleMeterRegistry();
        final CallMetrics metrics = MicrometerCallMetrics.create(registry, "server", null);
        final int names = MicrometerCallMetrics.MAX_METHODS + 100;
        for (int i = 0; i < names; i++)
        {
            final MethodDescriptor<?, ?> method = TestService.ECHO.toBuilder().fullMethodName("made.Up/m" + i).build();
            metrics.callEnded(method, Status.OK, metrics.callStarted());
            metrics.messageReceived(method, 10);
        }
        final Set<String> timed = methodTags(registry, "reverb.server.calls");
        assertThat(timed).hasSize(MicrometerCallMetrics.MAX_METHODS + 1).contains("made.Up/m0", RpcServer.Builder.OTHER_METHOD)
            .doesNotContain("made.Up/m" + (names - 1));
        assertThat(methodTags(registry, "reverb.server.message.size")).hasSize(MicrometerCallMetrics.MAX_METHODS + 1);
        assertThat(registry.get("reverb.server.calls").tag("method", RpcServer.Builder.OTHER_METHOD).timer().count())
            .as("every call of a name beyond the bound, counted").isEqualTo(100);

        // a name known before the bound keeps its own meters
        metrics.callEnded(TestService.ECHO.toBuilder().fullMethodName("made.Up/m0").build(), Status.OK, metrics.callStarted());
        assertThat(registry.get("reverb.server.calls").tag("method", "made.Up/m0").timer().count()).isEqualTo(2);
    }
}
