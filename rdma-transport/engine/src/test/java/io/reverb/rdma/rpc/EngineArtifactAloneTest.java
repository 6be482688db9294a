package io.reverb.rdma.rpc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assertions.fail;

import com.google.protobuf.Int32Value;
import com.google.protobuf.StringValue;
import io.reverb.rdma.engine.EngineConfig;
import io.reverb.rdma.engine.RdmaEngine;
import io.reverb.rdma.verbs.VerbsProvider;
import io.reverb.rdma.verbs.VerbsProviders;
import io.reverb.rpc.CallOptions;
import io.reverb.rpc.RpcChannel;
import io.reverb.rpc.RpcServer;
import io.reverb.rpc.TestService;
import io.reverb.rpc.stub.ClientCalls;
import io.reverb.rpc.transport.ResourceUsage;
import io.reverb.rpc.transport.TransportProvider;
import io.reverb.rpc.transport.Transports;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * What a project that depends on reverb-transport alone gets: this module's test class path has no DiSNi (checked
 * here first), calls run over {@code shm://} and {@code tcp://}, and {@code rdma://} fails with an error that names
 * the artifact to add, {@value #RDMA_ARTIFACT}, at every entrance (the rpc transport, a channel, a server, the
 * engine).
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class EngineArtifactAloneTest
{
    /** Spelled out, not taken from the code: renaming the artifact must change this test too. */
    private static final String RDMA_ARTIFACT = "io.reverb:reverb-transport-rdma";
    private static final Duration TIMEOUT = Duration.ofSeconds(20);

    @Test
    void shouldHaveNoDisniOnTheClassPath()
    {
        for (final String name : List.of("com.ibm.disni.verbs.RdmaCmId", "com.ibm.disni.verbs.impl.NativeDispatcher",
            "io.reverb.rdma.provider.disni.DisniVerbsProvider"))
        {
            assertThatThrownBy(() -> Class.forName(name, false, getClass().getClassLoader()))
                .as(name).isInstanceOf(ClassNotFoundException.class);
        }
        final List<String> schemes = VerbsProviders.all().stream().map(VerbsProvider::scheme).collect(Collectors.toList());
        assertThat(schemes).containsExactlyInAnyOrder("shm", "tcp");
    }

    @Test
    void shouldCallOverShm() throws InterruptedException
    {
        callsSucceed("shm://alone-" + ProcessHandle.current().pid());
    }

    @Test
    void shouldCallOverTcp() throws InterruptedException
    {
        callsSucceed("tcp://127.0.0.1:" + freePort());
    }

    @Test
    void shouldNameTheArtifactWhenRdmaIsAskedFor()
    {
        final TransportProvider rdma = Transports.providers().stream()
            .filter(p -> p.scheme().equals("rdma")).findFirst().orElseThrow();
        assertThat(rdma.isAvailable()).isFalse();
        assertThat(rdma.unavailabilityCause()).contains(RDMA_ARTIFACT);

        assertThatThrownBy(() -> RpcChannel.builder("rdma://127.0.0.1:7000").build())
            .hasMessageContaining("rdma").hasMessageContaining(RDMA_ARTIFACT);
        assertThatThrownBy(() -> RpcServer.builder("rdma://127.0.0.1:0").addService(new TestService()).build().start())
            .hasMessageContaining(RDMA_ARTIFACT);
        assertThatThrownBy(() -> RdmaEngine.open("rdma", new EngineConfig()))
            .isInstanceOf(IllegalArgumentException.class).hasMessageContaining(RDMA_ARTIFACT);
    }

    private static void callsSucceed(final String uri) throws InterruptedException
    {
        final TestService service = new TestService();
        try (RpcServer server = RpcServer.builder(uri).addService(service).build().start();
             RpcChannel channel = RpcChannel.builder(uri).build())
        {
            for (int i = 0; i < 20; i++)
            {
                final StringValue reply = ClientCalls.unary(channel, TestService.ECHO, CallOptions.DEFAULT,
                    StringValue.of("call-" + i)).block(TIMEOUT);
                assertThat(reply).isEqualTo(StringValue.of("call-" + i));
            }
            final List<?> streamed = ClientCalls.serverStreaming(channel, TestService.RANGE, CallOptions.DEFAULT,
                Int32Value.of(5)).collectList().block(TIMEOUT);
            assertThat(streamed).hasSize(5);
            assertThat(service.callsStarted.get()).isEqualTo(21);
        }
        awaitNothingInUse(Transports.providerFor(Transports.parse(uri)).resourceUsage());
    }

    private static void awaitNothingInUse(final ResourceUsage usage) throws InterruptedException
    {
        final long deadline = System.nanoTime() + TIMEOUT.toNanos();
        while (usage.buffersInUse() != 0 || usage.bytesInUse() != 0)
        {
            if (System.nanoTime() - deadline > 0)
            {
                fail("transport resources leaked: " + usage.describe());
            }
            Thread.sleep(5);
        }
    }

    private static int freePort()
    {
        try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress()))
        {
            return socket.getLocalPort();
        }
        catch (final IOException ex)
        {
            throw new UncheckedIOException(ex);
        }
    }
}
