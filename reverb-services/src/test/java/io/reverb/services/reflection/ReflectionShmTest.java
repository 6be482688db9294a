package io.reverb.services.reflection;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.ByteString;
import com.google.protobuf.DescriptorProtos.FileDescriptorProto;
import com.google.protobuf.InvalidProtocolBufferException;
import io.reverb.rpc.RpcChannel;
import io.reverb.rpc.RpcServer;
import io.reverb.rpc.StatusCode;
import io.reverb.rpc.transport.ResourceUsage;
import io.reverb.rpc.transport.Transports;
import io.reverb.services.reflecttest.LibraryRpc;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;

/**
 * The reflection service over {@code shm://} (the engine's shared-memory transport): several requests on one
 * stream, answers that parse, and every buffer of the transport back afterwards.
 */
class ReflectionShmTest
{
    private static final Duration TIMEOUT = Duration.ofSeconds(30);

    @Test
    void shouldAnswerOverShmAndGiveEveryBufferBack() throws InterruptedException
    {
        final String uri = "shm://reflection-" + ProcessHandle.current().pid();
        final ResourceUsage usage = Transports.providerFor(Transports.parse(uri)).resourceUsage();
        final RpcServer server = ReflectionService.addTo(RpcServer.builder(uri)
            .addService(new LibraryRpc.LibraryImplBase()
            {
            })).build().start();
        try (RpcChannel channel = RpcChannel.builder(uri).build())
        {
            final List<ServerReflectionResponse> responses = ServerReflectionRpc.newReactorStub(channel)
                .serverReflectionInfo(Flux.just(
                    ServerReflectionRequest.newBuilder().setListServices("").build(),
                    ServerReflectionRequest.newBuilder().setFileContainingSymbol("reverb.services.reflecttest.Nope")
                        .build(),
                    ServerReflectionRequest.newBuilder()
                        .setFileContainingSymbol("reverb.services.reflecttest.Library.ListBooks").build()))
                .collectList().block(TIMEOUT);

            assertThat(responses).hasSize(3);
            assertThat(responses.get(0).getListServicesResponse().getServiceList())
                .extracting(ServiceResponse::getName)
                .containsExactly("reverb.services.reflecttest.Library", "grpc.reflection.v1.ServerReflection");
            assertThat(responses.get(1).getErrorResponse().getErrorCode()).isEqualTo(StatusCode.NOT_FOUND.value());
            final List<String> names = new ArrayList<>();
            for (final ByteString bytes : responses.get(2).getFileDescriptorResponse().getFileDescriptorProtoList())
            {
                names.add(parse(bytes).getName());
            }
            assertThat(names).containsExactly("reverb/services/reflecttest/library.proto",
                "google/protobuf/timestamp.proto", "reverb/services/reflecttest/shelf.proto");
        }
        finally
        {
            server.shutdown();
            assertThat(server.awaitTermination(TIMEOUT)).isTrue();
        }
        // buffers come back as the connections close: wait for that (a safety-net limit, not a timing assertion)
        final long deadline = System.nanoTime() + TIMEOUT.toNanos();
        while (usage.buffersInUse() != 0 && System.nanoTime() < deadline)
        {
            Thread.sleep(10);
        }
        assertThat(usage.buffersInUse()).as(usage.describe()).isZero();
    }

    private static FileDescriptorProto parse(final ByteString bytes)
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
