package io.reverb.examples.migration;

import io.grpc.ManagedChannel;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.reverb.grpc.ReverbChannelBuilder;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/** The example as documented: one service, two transports, the same answers. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class DualServerTest
{
    @Test
    void shouldServeOneServiceOverNettyAndReverbAtOnce() throws Exception
    {
        final String[] uris = {"shm://reverb-migration-test-" + ProcessHandle.current().pid(), "tcp://127.0.0.1:0"};
        for (final String uri : uris)
        {
            try (DualServer server = DualServer.start(0, uri))
            {
                final ManagedChannel netty = NettyChannelBuilder.forAddress("127.0.0.1", server.nettyPort())
                    .usePlaintext().build();
                final ManagedChannel reverb = ReverbChannelBuilder.forTarget(server.reverbAddress()).build();
                try
                {
                    assertThat(MigrationClient.greet(netty, "a")).isEqualTo("Hello a");
                    assertThat(MigrationClient.greet(reverb, "b")).isEqualTo("Hello b");
                }
                finally
                {
                    netty.shutdownNow().awaitTermination(10, TimeUnit.SECONDS);
                    reverb.shutdownNow().awaitTermination(10, TimeUnit.SECONDS);
                }
            }
        }
    }
}
