package io.reverb.services.reflection;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.protobuf.ByteString;
import com.google.protobuf.DescriptorProtos.FileDescriptorProto;
import com.google.protobuf.Descriptors.DescriptorValidationException;
import com.google.protobuf.Descriptors.FileDescriptor;
import com.google.protobuf.InvalidProtocolBufferException;
import io.reverb.rpc.MethodDescriptor;
import io.reverb.rpc.RpcChannel;
import io.reverb.rpc.RpcServer;
import io.reverb.rpc.ServiceDefinition;
import io.reverb.rpc.StatusCode;
import io.reverb.rpc.protobuf.ProtoMarshaller;
import io.reverb.rpc.stub.ServerCalls;
import io.reverb.services.health.HealthStatusManager;
import io.reverb.services.reflecttest.Book;
import io.reverb.services.reflecttest.GetBookRequest;
import io.reverb.services.reflecttest.LibraryRpc;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;
import reactor.test.StepVerifier;

/**
 * The reflection service over {@code inproc://}: what a reflection client (grpcurl, grpc-java's) asks, on one bidi
 * stream, and that the files it gets back build into descriptors holding the symbols asked for.
 */
class ReflectionServiceTest
{
    private static final Duration TIMEOUT = Duration.ofSeconds(20);
    private static final AtomicInteger SERVERS = new AtomicInteger();
    private static final String LIBRARY = "reverb.services.reflecttest.Library";
    private static final String LIBRARY_FILE = "reverb/services/reflecttest/library.proto";
    private static final String SHELF_FILE = "reverb/services/reflecttest/shelf.proto";
    private static final String TIMESTAMP_FILE = "google/protobuf/timestamp.proto";
    private static final String SHELF = "reverb.services.reflecttest.Shelf";

    private RpcServer server;
    private RpcChannel channel;
    private ServerReflectionRpc.ServerReflectionReactorStub stub;

    @BeforeEach
    void startServer()
    {
        final String uri = "inproc://reflection-" + SERVERS.incrementAndGet();
        final RpcServer.Builder builder = RpcServer.builder(uri)
            .addService(new LibraryRpc.LibraryImplBase()
            {
                @Override
                public Mono<Book> getBook(final GetBookRequest request)
                {
                    return Mono.just(Book.newBuilder().setTitle(request.getTitle()).build());
                }
            })
            .addService(new HealthStatusManager().healthService());
        server = ReflectionService.addTo(builder).build().start();
        channel = RpcChannel.builder(uri).build();
        stub = ServerReflectionRpc.newReactorStub(channel);
    }

    @AfterEach
    void stopServer() throws InterruptedException
    {
        channel.close();
        server.shutdown();
        assertThat(server.awaitTermination(TIMEOUT)).isTrue();
    }

    @Test
    void shouldListEveryServiceOfTheServerItselfIncluded()
    {
        final ServerReflectionResponse response = stub.serverReflectionInfo(Flux.just(
            ServerReflectionRequest.newBuilder().setHost("localhost").setListServices("*").build()))
            .single().block(TIMEOUT);

        assertThat(response.getValidHost()).isEqualTo("localhost");
        assertThat(response.getOriginalRequest().getListServices()).isEqualTo("*");
        assertThat(response.getListServicesResponse().getServiceList())
            .extracting(ServiceResponse::getName)
            .containsExactly(LIBRARY, "reverb.health.v1.Health", "grpc.reflection.v1.ServerReflection");
    }

    @Test
    void shouldAnswerEachRequestOfOneStreamInTurnAndSendEachDependencyOnce()
    {
        final Sinks.Many<ServerReflectionRequest> requests = Sinks.many().unicast().onBackpressureBuffer();
        final Map<String, FileDescriptorProto> received = new HashMap<>();

        StepVerifier.create(stub.serverReflectionInfo(requests.asFlux()))
            // a service: its file and both imports
            .then(() -> requests.tryEmitNext(symbol(LIBRARY)))
            .assertNext(response ->
            {
                assertThat(fileNames(response, received)).containsExactly(LIBRARY_FILE, TIMESTAMP_FILE, SHELF_FILE);
                assertThat(build(LIBRARY_FILE, received).findServiceByName("Library").getMethods()).hasSize(2);
            })
            // an unknown symbol: NOT_FOUND, and the stream goes on
            .then(() -> requests.tryEmitNext(symbol("reverb.services.reflecttest.NoSuchThing")))
            .assertNext(response ->
            {
                assertThat(response.getOriginalRequest().getFileContainingSymbol())
                    .isEqualTo("reverb.services.reflecttest.NoSuchThing");
                assertError(response, StatusCode.NOT_FOUND, "NoSuchThing");
            })
            // a method (pkg.Svc.Method): the file again, the dependencies were sent on this stream already
            .then(() -> requests.tryEmitNext(symbol(LIBRARY + ".GetBook")))
            .assertNext(response ->
            {
                assertThat(fileNames(response, received)).containsExactly(LIBRARY_FILE);
                assertThat(build(LIBRARY_FILE, received).findServiceByName("Library").findMethodByName("GetBook")
                    .getInputType().getFullName()).isEqualTo("reverb.services.reflecttest.GetBookRequest");
            })
            // messages, a nested one and one in a dependency, and an enum
            .then(() -> requests.tryEmitNext(symbol(SHELF + ".Slot")))
            .assertNext(response ->
            {
                assertThat(fileNames(response, received)).containsExactly(SHELF_FILE);
                assertThat(build(SHELF_FILE, received).findMessageTypeByName("Shelf").findNestedTypeByName("Slot"))
                    .isNotNull();
            })
            .then(() -> requests.tryEmitNext(symbol(".reverb.services.reflecttest.Book")))
            .assertNext(response ->
            {
                assertThat(fileNames(response, received)).containsExactly(LIBRARY_FILE);
                assertThat(build(LIBRARY_FILE, received).findMessageTypeByName("Book").findFieldByName("published")
                    .getMessageType().getFullName()).isEqualTo("google.protobuf.Timestamp");
            })
            .then(() -> requests.tryEmitNext(symbol("reverb.services.reflecttest.Genre")))
            .assertNext(response -> assertThat(fileNames(response, received)).containsExactly(LIBRARY_FILE))
            // a field, an enum value (protobuf scopes it beside its enum), a field of a nested message
            .then(() -> requests.tryEmitNext(symbol("reverb.services.reflecttest.Book.title")))
            .assertNext(response -> assertThat(fileNames(response, received)).containsExactly(LIBRARY_FILE))
            .then(() -> requests.tryEmitNext(symbol("reverb.services.reflecttest.NOVEL")))
            .assertNext(response -> assertThat(fileNames(response, received)).containsExactly(LIBRARY_FILE))
            .then(() -> requests.tryEmitNext(symbol(SHELF + ".Slot.index")))
            .assertNext(response -> assertThat(fileNames(response, received)).containsExactly(SHELF_FILE))
            .then(() -> requests.tryEmitNext(symbol("reverb.services.reflecttest.Genre.NOVEL")))
            .assertNext(response -> assertError(response, StatusCode.NOT_FOUND, "Genre.NOVEL"))
            // nothing asked: INVALID_ARGUMENT, and the stream goes on
            .then(() -> requests.tryEmitNext(ServerReflectionRequest.newBuilder().setHost("h").build()))
            .assertNext(response -> assertError(response, StatusCode.INVALID_ARGUMENT, "none of"))
            .then(() -> requests.tryEmitNext(symbol("")))
            .assertNext(response -> assertError(response, StatusCode.INVALID_ARGUMENT, "empty"))
            // by file name
            .then(() -> requests.tryEmitNext(ServerReflectionRequest.newBuilder().setFileByFilename(SHELF_FILE).build()))
            .assertNext(response -> assertThat(fileNames(response, received)).containsExactly(SHELF_FILE))
            .then(() -> requests.tryEmitNext(ServerReflectionRequest.newBuilder().setFileByFilename("x.proto").build()))
            .assertNext(response -> assertError(response, StatusCode.NOT_FOUND, "x.proto"))
            // the reflection service describes itself
            .then(() -> requests.tryEmitNext(symbol("grpc.reflection.v1.ServerReflection.ServerReflectionInfo")))
            .assertNext(response ->
            {
                assertThat(fileNames(response, received)).containsExactly("grpc/reflection/v1/reflection.proto");
                assertThat(build("grpc/reflection/v1/reflection.proto", received)
                    .findServiceByName("ServerReflection").findMethodByName("ServerReflectionInfo").isClientStreaming())
                    .isTrue();
            })
            .then(requests::tryEmitComplete)
            .expectComplete()
            .verify(TIMEOUT);
    }

    @Test
    void shouldAnswerExtensionsFromTheDescriptors()
    {
        final List<ServerReflectionResponse> responses = stub.serverReflectionInfo(Flux.just(
                extension(SHELF, 105),
                extension(SHELF, 150),
                extension("reverb.services.reflecttest.Nope", 100),
                ServerReflectionRequest.newBuilder().setAllExtensionNumbersOfType(SHELF).build(),
                ServerReflectionRequest.newBuilder().setAllExtensionNumbersOfType("reverb.services.reflecttest.Book")
                    .build(),
                ServerReflectionRequest.newBuilder().setAllExtensionNumbersOfType("reverb.services.reflecttest.Nope")
                    .build(),
                symbol("reverb.services.reflecttest.room")))
            .collectList().block(TIMEOUT);

        final Map<String, FileDescriptorProto> received = new HashMap<>();
        assertThat(responses).hasSize(7);
        assertThat(fileNames(responses.get(0), received)).containsExactly(SHELF_FILE);
        assertThat(build(SHELF_FILE, received).findExtensionByName("room").getNumber()).isEqualTo(105);
        assertError(responses.get(1), StatusCode.NOT_FOUND, "no extension 150");
        assertError(responses.get(2), StatusCode.NOT_FOUND, "Nope");
        assertThat(responses.get(3).getAllExtensionNumbersResponse().getBaseTypeName()).isEqualTo(SHELF);
        assertThat(responses.get(3).getAllExtensionNumbersResponse().getExtensionNumberList()).containsExactly(100, 105);
        assertThat(responses.get(4).getAllExtensionNumbersResponse().getExtensionNumberList()).isEmpty();
        assertThat(responses.get(4).hasAllExtensionNumbersResponse()).isTrue();
        assertError(responses.get(5), StatusCode.NOT_FOUND, "Nope");
        assertThat(fileNames(responses.get(6), received)).containsExactly(SHELF_FILE);
    }

    @Test
    void shouldKeepTheRecordOfFilesSentPerStreamAndAnswerManyRequestsInOrder()
    {
        final List<ServerReflectionRequest> batch = new ArrayList<>();
        for (int i = 0; i < 100; i++)
        {
            batch.add(i % 2 == 0 ? symbol(LIBRARY + ".ListBooks") : symbol("missing.Symbol" + i));
        }
        for (int stream = 0; stream < 2; stream++)
        {
            final List<ServerReflectionResponse> responses = stub.serverReflectionInfo(Flux.fromIterable(batch))
                .collectList().block(TIMEOUT);
            assertThat(responses).hasSize(batch.size());
            for (int i = 0; i < batch.size(); i++)
            {
                final ServerReflectionResponse response = responses.get(i);
                assertThat(response.getOriginalRequest()).isEqualTo(batch.get(i));
                if (i % 2 == 1)
                {
                    assertError(response, StatusCode.NOT_FOUND, "missing.Symbol" + i);
                }
                else
                {
                    // each new stream gets the dependencies again, with its first answer only
                    assertThat(response.getFileDescriptorResponse().getFileDescriptorProtoCount())
                        .isEqualTo(i == 0 ? 3 : 1);
                }
            }
        }
    }

    @Test
    void shouldListAServiceWithoutDescriptorButNotFindItsSymbols()
    {
        final MethodDescriptor<GetBookRequest, Book> method = MethodDescriptor.<GetBookRequest, Book>newBuilder()
            .type(MethodDescriptor.MethodType.UNARY)
            .fullMethodName("hand.Made/Get")
            .requestMarshaller(ProtoMarshaller.of(GetBookRequest.getDefaultInstance()))
            .responseMarshaller(ProtoMarshaller.of(Book.getDefaultInstance()))
            .build();
        final ServiceDefinition handMade = ServiceDefinition.builder("hand.Made")
            .addMethod(method, ServerCalls.unary((GetBookRequest request) -> Mono.just(Book.getDefaultInstance())))
            .build();
        final ReflectionService reflection = ReflectionService.of(List.of(handMade));

        assertThat(reflection.serviceNames()).containsExactly("hand.Made", "grpc.reflection.v1.ServerReflection");
        final List<ServerReflectionResponse> responses = reflection.serverReflectionInfo(
            Flux.just(symbol("hand.Made"), symbol("x".repeat(100_000)))).collectList().block(TIMEOUT);
        assertError(responses.get(0), StatusCode.NOT_FOUND, "hand.Made");
        // a huge name is quoted back cut short
        assertError(responses.get(1), StatusCode.NOT_FOUND, "100000 chars");
        assertThat(responses.get(1).getErrorResponse().getErrorMessage().length())
            .isLessThan(ReflectionService.MAX_QUOTED_NAME + 100);
    }

    @Test
    void shouldRejectAServiceGivenTwice()
    {
        final ServiceDefinition library = new LibraryRpc.LibraryImplBase()
        {
        }.bindService();
        assertThatThrownBy(() -> ReflectionService.of(List.of(library, library)))
            .isInstanceOf(IllegalArgumentException.class)
            .hasMessageContaining(LIBRARY);
        assertThatThrownBy(() -> ServiceDefinition.builder("other.Name")
                .protoDescriptor(library.protoDescriptor()))
            .isInstanceOf(IllegalArgumentException.class)
            .hasMessageContaining("other.Name");
    }

    private static ServerReflectionRequest symbol(final String symbol)
    {
        return ServerReflectionRequest.newBuilder().setFileContainingSymbol(symbol).build();
    }

    private static ServerReflectionRequest extension(final String type, final int number)
    {
        return ServerReflectionRequest.newBuilder()
            .setFileContainingExtension(ExtensionRequest.newBuilder().setContainingType(type).setExtensionNumber(number))
            .build();
    }

    private static void assertError(final ServerReflectionResponse response, final StatusCode code, final String text)
    {
        assertThat(response.getMessageResponseCase())
            .isEqualTo(ServerReflectionResponse.MessageResponseCase.ERROR_RESPONSE);
        assertThat(response.getErrorResponse().getErrorCode()).isEqualTo(code.value());
        assertThat(response.getErrorResponse().getErrorMessage()).contains(text);
    }

    /** Parses the files of a file answer into {@code received}; returns their names in order. */
    private static List<String> fileNames(
        final ServerReflectionResponse response, final Map<String, FileDescriptorProto> received)
    {
        assertThat(response.getMessageResponseCase())
            .isEqualTo(ServerReflectionResponse.MessageResponseCase.FILE_DESCRIPTOR_RESPONSE);
        final List<String> names = new ArrayList<>();
        for (final ByteString bytes : response.getFileDescriptorResponse().getFileDescriptorProtoList())
        {
            try
            {
                final FileDescriptorProto file = FileDescriptorProto.parseFrom(bytes);
                received.put(file.getName(), file);
                names.add(file.getName());
            }
            catch (final InvalidProtocolBufferException ex)
            {
                throw new AssertionError("a file_descriptor_proto does not parse", ex);
            }
        }
        return names;
    }

    /** Builds a file from what the stream sent, its dependencies first, as a reflection client does. */
    private static FileDescriptor build(final String name, final Map<String, FileDescriptorProto> received)
    {
        return build(name, received, new HashMap<>());
    }

    private static FileDescriptor build(
        final String name, final Map<String, FileDescriptorProto> received, final Map<String, FileDescriptor> built)
    {
        final FileDescriptor done = built.get(name);
        if (done != null)
        {
            return done;
        }
        final FileDescriptorProto proto = received.get(name);
        assertThat(proto).as("file %s was sent on the stream", name).isNotNull();
        final List<FileDescriptor> dependencies = new ArrayList<>();
        for (final String dependency : proto.getDependencyList())
        {
            dependencies.add(build(dependency, received, built));
        }
        try
        {
            final FileDescriptor file = FileDescriptor.buildFrom(proto, dependencies.toArray(new FileDescriptor[0]));
            built.put(name, file);
            return file;
        }
        catch (final DescriptorValidationException ex)
        {
            throw new AssertionError("file " + name + " does not build from what the stream sent", ex);
        }
    }
}
