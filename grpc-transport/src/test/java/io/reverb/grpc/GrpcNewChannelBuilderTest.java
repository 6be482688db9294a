package io.reverb.grpc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.protobuf.ByteString;
import io.grpc.ChoiceChannelCredentials;
import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ManagedChannel;
import io.grpc.ManagedChannelBuilder;
import io.grpc.ManagedChannelRegistry;
import io.grpc.Server;
import io.grpc.TlsChannelCredentials;
import io.grpc.stub.StreamObserver;
import io.reverb.grpc.test.EchoGrpc;
import io.reverb.grpc.test.EchoReply;
import io.reverb.grpc.test.EchoRequest;
import java.net.URI;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * reverb-grpc as a grpc-java channel provider: {@code Grpc.newChannelBuilder(address, insecure)} of a Reverb address
 * gives a {@link ReverbChannelBuilder} whose channel reaches the Reverb server, with no Reverb class named; TLS
 * credentials are refused with where to set Reverb's TLS; every other target, and {@code ManagedChannelBuilder.forTarget},
 * stay Netty's (Netty is on this module's test class path).
 */
class GrpcNewChannelBuilderTest
{
    private static final AtomicInteger IDS = new AtomicInteger();

    private static final class Echo extends EchoGrpc.EchoImplBase
    {
        final AtomicInteger calls = new AtomicInteger();

        @Override
        public void unary(final EchoRequest request, final StreamObserver<EchoReply> responses)
        {
            calls.incrementAndGet();
            responses.onNext(EchoReply.newBuilder().setPayload(request.getPayload()).build());
            responses.onCompleted();
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"inproc", "shm", "tcp"})
    void shouldBuildAReverbChannelForAReverbAddressThroughGrpcJavasRegistry(final String scheme) throws Exception
    {
        final String bind = switch (scheme)
        {
            case "inproc" -> "inproc://new-channel-builder-" + IDS.incrementAndGet();
            case "shm" -> "shm://new-channel-builder-" + ProcessHandle.current().pid() + "-" + IDS.incrementAndGet();
            default -> "tcp://127.0.0.1:0";
        };
        final Echo echo = new Echo();
        final Server server = ReverbServerBuilder.forAddress(bind).addService(echo).build().start();
        final String address = server.getListenSockets().get(0).toString();
        ManagedChannel channel = null;
        try
        {
            final ManagedChannelBuilder<?> builder = Grpc.newChannelBuilder(address, InsecureChannelCredentials.create());
            assertThat(builder).isInstanceOf(ReverbChannelBuilder.class);
            channel = builder.build();
            assertThat(channel.authority()).isEqualTo(URI.create(address).getAuthority());
            final EchoReply reply = EchoGrpc.newBlockingStub(channel).withDeadlineAfter(30, TimeUnit.SECONDS)
                .unary(EchoRequest.newBuilder().setPayload(ByteString.copyFromUtf8("hi")).build());
            assertThat(reply.getPayload().toStringUtf8()).isEqualTo("hi");
            assertThat(echo.calls).hasValue(1);
            // a choice that includes insecure credentials is taken too
            assertThat(Grpc.newChannelBuilder(address, ChoiceChannelCredentials.create(TlsChannelCredentials.create(),
                InsecureChannelCredentials.create()))).isInstanceOf(ReverbChannelBuilder.class);
        }
        finally
        {
            if (channel != null)
            {
                channel.shutdownNow().awaitTermination(30, TimeUnit.SECONDS);
            }
            server.shutdownNow().awaitTermination(30, TimeUnit.SECONDS);
        }
        AbstractReverbConformanceTest.assertReleased(address);
    }

    @Test
    void shouldRefuseTlsCredentialsSayingWhereReverbsTlsIsSet()
    {
        assertThatThrownBy(() -> Grpc.newChannelBuilder("tcp://127.0.0.1:7000", TlsChannelCredentials.create()))
            .isInstanceOf(ManagedChannelRegistry.ProviderNotFoundException.class)
            .hasMessageContaining("engine settings");
    }

    @Test
    void shouldLeaveEveryOtherTargetAndTheProviderOfForTargetToNetty()
    {
        final ManagedChannelBuilder<?> dns = Grpc.newChannelBuilder("localhost:7000", InsecureChannelCredentials.create());
        assertThat(dns).isNotInstanceOf(ReverbChannelBuilder.class);
        assertThat(dns.getClass().getName()).contains("Netty");
        assertThat(ManagedChannelBuilder.forTarget("localhost:7000")).isNotInstanceOf(ReverbChannelBuilder.class);
        // grpc-java's default scheme stays dns: a target without a scheme is not Reverb's
        assertThat(ManagedChannelBuilder.forTarget("shm-like-host:7000").getClass().getName()).contains("Netty");
    }

    @Test
    void shouldRefuseANonReverbTargetWhenAskedDirectly()
    {
        final ReverbChannelProvider provider = new ReverbChannelProvider();
        assertThatThrownBy(() -> provider.builderForTarget("localhost:7000"))
            .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("not a Reverb address");
        assertThatThrownBy(() -> provider.builderForAddress("localhost", 7000))
            .isInstanceOf(UnsupportedOperationException.class).hasMessageContaining("tcp://localhost:7000");
        assertThat(provider.builderForTarget("shm://x")).isInstanceOf(ReverbChannelBuilder.class);
    }
}
