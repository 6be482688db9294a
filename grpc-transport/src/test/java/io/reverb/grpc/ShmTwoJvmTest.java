package io.reverb.grpc;

import com.google.protobuf.ByteString;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.reverb.grpc.test.EchoGrpc;
import io.reverb.grpc.test.EchoReply;
import io.reverb.grpc.test.EchoRequest;
import io.reverb.grpc.test.EchoRpc;
import io.reverb.rpc.RpcChannel;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * grpc-java over {@code shm://} between two JVMs: the server is an unchanged grpc-java service in a child process;
 * this JVM calls it with grpc-java stubs and with Reverb's native stubs.
 */
@Timeout(value = 90, unit = TimeUnit.SECONDS)
class ShmTwoJvmTest
{
    private Process child;
    private String address;

    @BeforeEach
    void startServerProcess() throws Exception
    {
        address = "shm://grpc-2jvm-" + ProcessHandle.current().pid();
        child = new ProcessBuilder(
            Paths.get(System.getProperty("java.home"), "bin", "java").toString(),
            "--add-exports", "java.base/jdk.internal.misc=ALL-UNNAMED",
            "-Xmx512m",
            "-cp", System.getProperty("java.class.path"),
            GrpcServerMain.class.getName(), address)
            .redirectError(ProcessBuilder.Redirect.INHERIT)
            .start();
        final BufferedReader out = new BufferedReader(new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8));
        assertThat(out.readLine()).as("server process ready").isEqualTo("READY");
    }

    @AfterEach
    void stopServerProcess() throws Exception
    {
        try
        {
            child.getOutputStream().close();
            assertThat(child.waitFor(60, TimeUnit.SECONDS)).as("server process exited").isTrue();
            assertThat(child.exitValue()).as("server process exit code (0: graceful shutdown done)").isZero();
        }
        finally
        {
            child.destroyForcibly();
        }
        AbstractReverbConformanceTest.assertReleased(address);
    }

    @Test
    void grpcAndNativeStubsShouldCallGrpcServiceInAnotherJvm() throws Exception
    {
        final ManagedChannel channel = ReverbChannelBuilder.forTarget(address)
            .maxInboundMessageSize(AbstractGrpcConformanceTest.MAX_MESSAGE).build();
        try (RpcChannel nativeChannel = RpcChannel.builder(address).build())
        {
            final EchoGrpc.EchoBlockingStub stub = EchoGrpc.newBlockingStub(channel);
            for (final int size : new int[] {0, 64, 4097, 1 << 20, 8 << 20})
            {
                final ByteString payload = ByteString.copyFrom(new byte[size]);
                assertThat(stub.unary(EchoRequest.newBuilder().setPayload(payload).build()).getPayload().size())
                    .isEqualTo(size);
            }
            final List<EchoReply> replies = new ArrayList<>();
            stub.serverStream(EchoRequest.newBuilder().setCount(200).setSize(100).build()).forEachRemaining(replies::add);
            assertThat(replies).hasSize(200);
            assertThatThrownBy(() -> stub.unary(EchoRequest.newBuilder()
                .setErrorCode(Status.Code.ABORTED.value()).setErrorMessage("across processes").build()))
                .isInstanceOfSatisfying(StatusRuntimeException.class, e ->
                {
                    assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.ABORTED);
                    assertThat(e.getStatus().getDescription()).isEqualTo("across processes");
                    assertThat(e.getTrailers().get(GrpcEchoService.ERROR_BIN)).isEqualTo(GrpcEchoService.ERROR_BYTES);
                });

            final EchoRpc.EchoReactorStub reverb = EchoRpc.newReactorStub(nativeChannel);
            assertThat(reverb.unary(EchoRequest.newBuilder().setPayload(ByteString.copyFromUtf8("native")).build())
                .block(Duration.ofSeconds(30)).getPayload().toStringUtf8()).isEqualTo("native");
            assertThat(reverb.serverStream(EchoRequest.newBuilder().setCount(100).setSize(10).build())
                .count().block(Duration.ofSeconds(30))).isEqualTo(100);
        }
        finally
        {
            channel.shutdownNow();
            assertThat(channel.awaitTermination(10, TimeUnit.SECONDS)).isTrue();
        }
    }
}
