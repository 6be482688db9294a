package io.reverb.services.reflection.interop;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.DescriptorProtos.FileDescriptorProto;
import com.google.protobuf.InvalidProtocolBufferException;
import io.grpc.Status;
import io.grpc.reflection.v1.ServerReflectionProto;
import io.grpc.reflection.v1.ServerReflectionRequest;
import io.grpc.reflection.v1.ServerReflectionResponse;
import io.grpc.reflection.v1.ServiceResponse;
import io.reverb.rpc.CallOptions;
import io.reverb.rpc.MethodDescriptor;
import io.reverb.rpc.RpcChannel;
import io.reverb.rpc.RpcServer;
import io.reverb.rpc.protobuf.ProtoMarshaller;
import io.reverb.rpc.stub.ClientCalls;
import io.reverb.services.health.HealthStatusManager;
import io.reverb.services.reflection.ReflectionService;
import io.reverb.services.reflection.ServerReflectionRpc;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;

/**
 * Our {@code grpc.reflection.v1} must be grpc's on the wire, so that grpcurl and grpc-java's reflection clients
 * read a Reverb server: checked against grpc-java's own generated messages (io.grpc:grpc-services), which this
 * test imports (ours are in io.reverb.services.reflection).
 */
class ReflectionProtocolCompatibilityTest
{
    private static final Duration TIMEOUT = Duration.ofSeconds(20);

    @Test
    void shouldDeclareTheSameFileAsGrpcJavaOptionsAside()
    {
        // ours as a server hands it out: the descriptor its service definition carries
        final FileDescriptorProto ours = ReflectionService.of(List.of()).bindService().protoDescriptor().getFile()
            .toProto().toBuilder().clearOptions().build();
        final FileDescriptorProto theirs = ServerReflectionProto.getDescriptor().toProto().toBuilder()
            .clearOptions().build();

        assertThat(ours.getName()).isEqualTo("grpc/reflection/v1/reflection.proto");
        assertThat(ours.getPackage()).isEqualTo("grpc.reflection.v1");
        // every message, field (name, number, type, label, oneof), the service and its method alike
        assertThat(ours).isEqualTo(theirs);
    }

    @Test
    void shouldAnswerAClientUsingGrpcJavasMessages() throws InterruptedException
    {
        final MethodDescriptor<ServerReflectionRequest, ServerReflectionResponse> method =
            MethodDescriptor.<ServerReflectionRequest, ServerReflectionResponse>newBuilder()
            .type(MethodDescriptor.MethodType.BIDI_STREAMING)
            .fullMethodName("grpc.reflection.v1.ServerReflection/ServerReflectionInfo")
            .requestMarshaller(ProtoMarshaller.of(ServerReflectionRequest.getDefaultInstance()))
            .responseMarshaller(ProtoMarshaller.of(ServerReflectionResponse.getDefaultInstance()))
            .build();
        assertThat(method.fullMethodName()).isEqualTo(ServerReflectionRpc.getServerReflectionInfoMethod().fullMethodName());

        final String uri = "inproc://reflection-compat";
        final RpcServer server = ReflectionService.addTo(RpcServer.builder(uri)
            .addService(new HealthStatusManager().healthService())).build().start();
        try (RpcChannel channel = RpcChannel.builder(uri).build())
        {
            final List<ServerReflectionResponse> responses = ClientCalls.bidiStreaming(
                channel, method, CallOptions.DEFAULT, Flux.just(
                    ServerReflectionRequest.newBuilder().setListServices("").build(),
                    ServerReflectionRequest.newBuilder()
                        .setFileContainingSymbol("reverb.health.v1.Health.Watch").build(),
                    ServerReflectionRequest.newBuilder()
                        .setFileContainingSymbol("reverb.health.v1.Nope").build()))
                .collectList().block(TIMEOUT);

            assertThat(responses).hasSize(3);
            assertThat(responses.get(0).getListServicesResponse().getServiceList())
                .extracting(ServiceResponse::getName)
                .containsExactly("reverb.health.v1.Health", "grpc.reflection.v1.ServerReflection");
            assertThat(responses.get(1).getFileDescriptorResponse().getFileDescriptorProtoList())
                .hasSize(1)
                .allSatisfy(bytes -> assertThat(parse(bytes.toByteArray()).getName())
                    .isEqualTo("reverb/health/v1/health.proto"));
            assertThat(responses.get(1).getOriginalRequest().getFileContainingSymbol())
                .isEqualTo("reverb.health.v1.Health.Watch");
            assertThat(responses.get(2).getErrorResponse().getErrorCode()).isEqualTo(Status.Code.NOT_FOUND.value());
        }
        finally
        {
            server.shutdown();
            assertThat(server.awaitTermination(TIMEOUT)).isTrue();
        }
    }

    private static FileDescriptorProto parse(final byte[] bytes)
    {
        try
        {
            return FileDescriptorProto.parseFrom(bytes);
        }
        catch (final InvalidProtocolBufferException ex)
        {
            throw new AssertionError(ex);
        }
    }
}
