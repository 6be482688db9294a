package io.reverb.services.reflection;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.DescriptorProtos.FileDescriptorProto;
import com.google.protobuf.InvalidProtocolBufferException;
import io.reverb.rpc.CallOptions;
import io.reverb.rpc.MethodDescriptor;
import io.reverb.rpc.RpcChannel;
import io.reverb.rpc.RpcServer;
import io.reverb.rpc.protobuf.ProtoMarshaller;
import io.reverb.rpc.stub.ClientCalls;
import io.reverb.services.health.HealthStatusManager;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;

/**
 * Our {@code grpc.reflection.v1} must be grpc's on the wire, so that grpcurl and grpc-java's reflection clients
 * read a Reverb server: checked against grpc-java's own generated messages (io.grpc:grpc-services).
 */
class ReflectionProtocolCompatibilityTest
{
    private static final Duration TIMEOUT = Duration.ofSeconds(20);

    @Test
    void shouldDeclareTheSameFileAsGrpcJavaOptionsAside()
    {
        final FileDescriptorProto ours = ServerReflectionProto.getDescriptor().toProto().toBuilder()
            .clearOptions().build();
        final FileDescriptorProto theirs = io.grpc.reflection.v1.ServerReflectionProto.getDescriptor().toProto()
            .toBuilder().clearOptions().build();

        assertThat(ours.getName()).isEqualTo("grpc/reflection/v1/reflection.proto");
        assertThat(ours.getPackage()).isEqualTo("grpc.reflection.v1");
        // every message, field (name, number, type, label, oneof), the service and its method alike
        assertThat(ours).isEqualTo(theirs);
    }

    @Test
    void shouldAnswerAClientUsingGrpcJavasMessages() throws InterruptedException
    {
        final MethodDescriptor<io.grpc.reflection.v1.ServerReflectionRequest, io.grpc.reflection.v1.ServerReflectionResponse>
            method = MethodDescriptor.<io.grpc.reflection.v1.ServerReflectionRequest,
                io.grpc.reflection.v1.ServerReflectionResponse>newBuilder()
            .type(MethodDescriptor.MethodType.BIDI_STREAMING)
            .fullMethodName("grpc.reflection.v1.ServerReflection/ServerReflectionInfo")
            .requestMarshaller(ProtoMarshaller.of(io.grpc.reflection.v1.ServerReflectionRequest.getDefaultInstance()))
            .responseMarshaller(ProtoMarshaller.of(io.grpc.reflection.v1.ServerReflectionResponse.getDefaultInstance()))
            .build();
        assertThat(method.fullMethodName()).isEqualTo(ServerReflectionRpc.getServerReflectionInfoMethod().fullMethodName());

        final String uri = "inproc://reflection-compat";
        final RpcServer server = ReflectionService.addTo(RpcServer.builder(uri)
            .addService(new HealthStatusManager().healthService())).build().start();
        try (RpcChannel channel = RpcChannel.builder(uri).build())
        {
            final List<io.grpc.reflection.v1.ServerReflectionResponse> responses = ClientCalls.bidiStreaming(
                channel, method, CallOptions.DEFAULT, Flux.just(
                    io.grpc.reflection.v1.ServerReflectionRequest.newBuilder().setListServices("").build(),
                    io.grpc.reflection.v1.ServerReflectionRequest.newBuilder()
                        .setFileContainingSymbol("reverb.health.v1.Health.Watch").build(),
                    io.grpc.reflection.v1.ServerReflectionRequest.newBuilder()
                        .setFileContainingSymbol("reverb.health.v1.Nope").build()))
                .collectList().block(TIMEOUT);

            assertThat(responses).hasSize(3);
            assertThat(responses.get(0).getListServicesResponse().getServiceList())
                .extracting(io.grpc.reflection.v1.ServiceResponse::getName)
                .containsExactly("reverb.health.v1.Health", "grpc.reflection.v1.ServerReflection");
            assertThat(responses.get(1).getFileDescriptorResponse().getFileDescriptorProtoList())
                .hasSize(1)
                .allSatisfy(bytes -> assertThat(parse(bytes.toByteArray()).getName())
                    .isEqualTo("reverb/health/v1/health.proto"));
            assertThat(responses.get(1).getOriginalRequest().getFileContainingSymbol())
                .isEqualTo("reverb.health.v1.Health.Watch");
            assertThat(responses.get(2).getErrorResponse().getErrorCode()).isEqualTo(io.grpc.Status.Code.NOT_FOUND.value());
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
