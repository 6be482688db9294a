package io.reverb.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.grpc.ManagedChannel;
import io.reverb.rpc.RpcChannel;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.springframework.util.unit.DataSize;

/**
 * The channel factories without a context: once closed they refuse every name, including one whose (closed) channel
 * they still hold, and settings no channel can use fail with the property's name.
 */
class ReverbChannelFactoryTest
{
    private static ReverbProperties.Client client(final ReverbProperties.Channel channel)
    {
        final ReverbProperties.Client client = new ReverbProperties.Client();
        client.getChannels().put("echo", channel);
        return client;
    }

    private static ReverbProperties.Channel channel()
    {
        final ReverbProperties.Channel channel = new ReverbProperties.Channel();
        channel.setAddress("inproc://channel-factory-" + System.nanoTime());
        return channel;
    }

    @Test
    void shouldRefuseAChannelMadeBeforeTheFactoryClosed()
    {
        final ReverbChannelFactory channels = new ReverbChannelFactory(client(channel()), List.of());
        final RpcChannel made = channels.channel("echo");
        assertThat(channels.channel("echo")).isSameAs(made);

        channels.destroy();

        assertThatThrownBy(() -> channels.channel("echo")).isInstanceOf(IllegalStateException.class)
            .hasMessageContaining("closed");
        assertThatThrownBy(() -> channels.stub("echo", c -> c)).isInstanceOf(IllegalStateException.class);
    }

    @Test
    void shouldRefuseAGrpcJavaChannelMadeBeforeTheFactoryClosed() throws Exception
    {
        final ReverbChannelFactory reverb = new ReverbChannelFactory(client(channel()), List.of());
        final ReverbGrpcChannelFactory channels = new ReverbGrpcChannelFactory(reverb, List.of());
        final ManagedChannel made = channels.channel("echo");
        assertThat(channels.channel("echo")).isSameAs(made);

        channels.destroy();
        reverb.destroy();

        assertThat(made.isShutdown()).isTrue();
        assertThatThrownBy(() -> channels.channel("echo")).isInstanceOf(IllegalStateException.class)
            .hasMessageContaining("closed");
    }

    @Test
    void shouldRejectADefaultDeadlineThatIsNotPositive()
    {
        for (final Duration deadline : List.of(Duration.ZERO, Duration.ofMillis(-5)))
        {
            final ReverbProperties.Channel channel = channel();
            channel.setDefaultDeadline(deadline);
            assertThatThrownBy(() -> new ReverbChannelFactory(client(channel), List.of()))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("reverb.client.channels.echo.default-deadline=" + deadline);
        }
    }

    @Test
    void shouldRejectAMessageSizeBeyondAnInt()
    {
        final ReverbProperties.Channel channel = channel();
        channel.setMaxInboundMessageSize(DataSize.ofGigabytes(3));
        assertThatThrownBy(() -> new ReverbChannelFactory(client(channel), List.of()))
            .isInstanceOf(IllegalArgumentException.class)
            .hasMessageContaining("reverb.client.channels.echo.max-inbound-message-size=3221225472B");
    }
}
