package io.reverb.services.reflection.interop;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.ByteString;
import io.grpc.Status;
import io.grpc.reflection.v1.ExtensionRequest;
import io.grpc.reflection.v1.ServerReflectionRequest;
import io.grpc.reflection.v1.ServerReflectionResponse;
import io.grpc.reflection.v1.ServiceResponse;
import io.reverb.rpc.CallOptions;
import io.reverb.rpc.MethodDescriptor;
import io.reverb.rpc.RpcChannel;
import io.reverb.rpc.RpcServer;
import io.reverb.rpc.protobuf.ProtoMarshaller;
import io.reverb.rpc.stub.ClientCalls;
import io.reverb.services.reflection.ReflectionService;
import io.reverb.services.reflecttest.LibraryRpc;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;

/**
 * The same requests, on one stream each, to grpc-java's own {@code ProtoReflectionServiceV1} (an in-process grpc-java
 * server serving the test service with its descriptor) and to a Reverb server with {@link ReflectionService}: the
 * answers must agree, file for file and error code for error code.
 */
class GrpcJavaReflectionComparisonTest
{
    private static final Duration TIMEOUT = Duration.ofSeconds(20);
    private static final String LIBRARY = "reverb.services.reflecttest.Library";
    private static final String SHELF = "reverb.services.reflecttest.Shelf";

    @Test
    void shouldAnswerAsGrpcJavasReflectionServiceDoes() throws Exception
    {
        final List<ServerReflectionRequest> requests = List.of(
            symbol(LIBRARY + ".GetBook"),
            symbol(SHELF),
            symbol("reverb.services.reflecttest.Nope"),
            ServerReflectionRequest.newBuilder().setFileByFilename("reverb/services/reflecttest/shelf.proto").build(),
            ServerReflectionRequest.newBuilder().setFileByFilename("nope.proto").build(),
            ServerReflectionRequest.newBuilder().setFileContainingExtension(
                ExtensionRequest.newBuilder().setContainingType(SHELF).setExtensionNumber(105)).build(),
            ServerReflectionRequest.newBuilder().setAllExtensionNumbersOfType(SHELF).build(),
            ServerReflectionRequest.newBuilder().setListServices("").build());

        final List<ServerReflectionResponse> theirs = GrpcJavaReflection.ask(requests, TIMEOUT);
        final List<ServerReflectionResponse> ours = askReverb(requests);
        assertThat(ours).hasSameSizeAs(theirs).hasSize(requests.size());

        // the first answer of a stream: the file and all its dependencies, on both
        assertThat(ours.get(0).getFileDescriptorResponse().getFileDescriptorProto(0))
            .isEqualTo(theirs.get(0).getFileDescriptorResponse().getFileDescriptorProto(0));
        assertThat(files(ours.get(0))).hasSize(3).isEqualTo(files(theirs.get(0)));
        // later ones: the file asked for first, on both (grpc-java sends the dependencies again, Reverb once a stream,
        // as grpc-go); shelf.proto imports nothing, so the two agree here
        for (final int i : new int[] {1, 3, 5})
        {
            assertThat(files(ours.get(i))).as("answer %d", i).isEqualTo(files(theirs.get(i))).hasSize(1);
        }
        for (final int i : new int[] {2, 4})
        {
            assertThat(ours.get(i).getErrorResponse().getErrorCode()).as("answer %d", i)
                .isEqualTo(theirs.get(i).getErrorResponse().getErrorCode())
                .isEqualTo(Status.Code.NOT_FOUND.value());
        }
        assertThat(ours.get(6).getAllExtensionNumbersResponse().getBaseTypeName())
            .isEqualTo(theirs.get(6).getAllExtensionNumbersResponse().getBaseTypeName()).isEqualTo(SHELF);
        assertThat(ours.get(6).getAllExtensionNumbersResponse().getExtensionNumberList())
            .containsExactlyInAnyOrderElementsOf(theirs.get(6).getAllExtensionNumbersResponse().getExtensionNumberList())
            .containsExactlyInAnyOrder(100, 105);
        assertThat(serviceNames(ours.get(7))).isEqualTo(serviceNames(theirs.get(7)))
            .containsExactlyInAnyOrder(LIBRARY, "grpc.reflection.v1.ServerReflection");
        for (int i = 0; i < requests.size(); i++)
        {
            assertThat(ours.get(i).getOriginalRequest()).isEqualTo(theirs.get(i).getOriginalRequest());
        }
    }

    private static List<ServerReflectionResponse> askReverb(final List<ServerReflectionRequest> requests)
        throws InterruptedException
    {
        final MethodDescriptor<ServerReflectionRequest, ServerReflectionResponse> method =
            MethodDescriptor.<ServerReflectionRequest, ServerReflectionResponse>newBuilder()
                .type(MethodDescriptor.MethodType.BIDI_STREAMING)
                .fullMethodName("grpc.reflection.v1.ServerReflection/ServerReflectionInfo")
                .requestMarshaller(ProtoMarshaller.of(ServerReflectionRequest.getDefaultInstance()))
                .responseMarshaller(ProtoMarshaller.of(ServerReflectionResponse.getDefaultInstance()))
                .build();
        final String uri = "inproc://reflection-vs-grpc-java";
        final RpcServer server = ReflectionService.addTo(RpcServer.builder(uri)
            .addService(new LibraryRpc.LibraryImplBase()
            {
            })).build().start();
        try (RpcChannel channel = RpcChannel.builder(uri).build())
        {
            return ClientCalls.bidiStreaming(channel, method, CallOptions.DEFAULT, Flux.fromIterable(requests))
                .collectList().block(TIMEOUT);
        }
        finally
        {
            server.shutdown();
            assertThat(server.awaitTermination(TIMEOUT)).isTrue();
        }
    }

    private static ServerReflectionRequest symbol(final String symbol)
    {
        return ServerReflectionRequest.newBuilder().setFileContainingSymbol(symbol).build();
    }

    private static Set<ByteString> files(final ServerReflectionResponse response)
    {
        assertThat(response.hasFileDescriptorResponse()).as("a file answer: %s", response.getErrorResponse()).isTrue();
        return new HashSet<>(response.getFileDescriptorResponse().getFileDescriptorProtoList());
    }

    private static Set<String> serviceNames(final ServerReflectionResponse response)
    {
        final Set<String> names = new HashSet<>();
        for (final ServiceResponse service : response.getListServicesResponse().getServiceList())
        {
            names.add(service.getName());
        }
        return names;
    }
}
