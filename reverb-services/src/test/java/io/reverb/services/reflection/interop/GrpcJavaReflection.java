package io.reverb.services.reflection.interop;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.Descriptors.FileDescriptor;
import com.google.protobuf.Message;
import io.grpc.ManagedChannel;
import io.grpc.MethodDescriptor;
import io.grpc.MethodDescriptor.MethodType;
import io.grpc.Server;
import io.grpc.ServerServiceDefinition;
import io.grpc.ServiceDescriptor;
import io.grpc.Status;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.inprocess.InProcessServerBuilder;
import io.grpc.protobuf.ProtoFileDescriptorSupplier;
import io.grpc.protobuf.ProtoUtils;
import io.grpc.protobuf.services.ProtoReflectionServiceV1;
import io.grpc.reflection.v1.ServerReflectionGrpc;
import io.grpc.reflection.v1.ServerReflectionRequest;
import io.grpc.reflection.v1.ServerReflectionResponse;
import io.grpc.stub.ServerCalls;
import io.grpc.stub.StreamObserver;
import io.reverb.services.reflecttest.Book;
import io.reverb.services.reflecttest.GetBookRequest;
import io.reverb.services.reflecttest.LibraryRpc;
import io.reverb.services.reflecttest.Shelf;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * grpc-java's own reflection service, {@code ProtoReflectionServiceV1}, on an in-process grpc-java server that serves
 * the test service {@code reverb.services.reflecttest.Library} with its descriptor: the reference the comparison test
 * holds Reverb's answers against.
 */
final class GrpcJavaReflection
{
    private static final String LIBRARY = "reverb.services.reflecttest.Library";

    private GrpcJavaReflection()
    {
    }

    /**
     * @param requests sent on one stream, which then ends.
     * @param timeout  safety net for the whole exchange.
     * @return grpc-java's answers, in order.
     * @throws Exception if the exchange fails.
     */
    static List<ServerReflectionResponse> ask(final List<ServerReflectionRequest> requests, final Duration timeout)
        throws Exception
    {
        final FileDescriptor file = new LibraryRpc.LibraryImplBase()
        {
        }.bindService().protoDescriptor().getFile();
        final MethodDescriptor<GetBookRequest, Book> getBook = grpcMethod(MethodType.UNARY, "GetBook",
            GetBookRequest.getDefaultInstance());
        final MethodDescriptor<Shelf, Book> listBooks = grpcMethod(MethodType.SERVER_STREAMING, "ListBooks",
            Shelf.getDefaultInstance());
        final ServiceDescriptor service = ServiceDescriptor.newBuilder(LIBRARY)
            .setSchemaDescriptor((ProtoFileDescriptorSupplier)() -> file)
            .addMethod(getBook)
            .addMethod(listBooks)
            .build();
        final ServerServiceDefinition definition = ServerServiceDefinition.builder(service)
            .addMethod(getBook, ServerCalls.asyncUnaryCall((request, observer) ->
                observer.onError(Status.UNIMPLEMENTED.asRuntimeException())))
            .addMethod(listBooks, ServerCalls.asyncServerStreamingCall((request, observer) ->
                observer.onError(Status.UNIMPLEMENTED.asRuntimeException())))
            .build();
        final String name = "reflection-grpc-java";
        final Server server = InProcessServerBuilder.forName(name).directExecutor()
            .addService(definition)
            .addService(ProtoReflectionServiceV1.newInstance())
            .build().start();
        final ManagedChannel channel = InProcessChannelBuilder.forName(name).directExecutor().build();
        try
        {
            final List<ServerReflectionResponse> responses = new ArrayList<>();
            final CompletableFuture<List<ServerReflectionResponse>> done = new CompletableFuture<>();
            final StreamObserver<ServerReflectionRequest> out = ServerReflectionGrpc.newStub(channel)
                .serverReflectionInfo(new StreamObserver<ServerReflectionResponse>()
                {
                    @Override
                    public void onNext(final ServerReflectionResponse response)
                    {
                        responses.add(response);
                    }

                    @Override
                    public void onError(final Throwable error)
                    {
                        done.completeExceptionally(error);
                    }

                    @Override
                    public void onCompleted()
                    {
                        done.complete(responses);
                    }
                });
            requests.forEach(out::onNext);
            out.onCompleted();
            return done.get(timeout.toSeconds(), TimeUnit.SECONDS);
        }
        finally
        {
            channel.shutdownNow();
            server.shutdownNow();
            assertThat(server.awaitTermination(timeout.toSeconds(), TimeUnit.SECONDS)).isTrue();
        }
    }

    private static <Req extends Message> MethodDescriptor<Req, Book> grpcMethod(
        final MethodType type, final String method, final Req requestPrototype)
    {
        return MethodDescriptor.<Req, Book>newBuilder()
            .setType(type)
            .setFullMethodName(MethodDescriptor.generateFullMethodName(LIBRARY, method))
            .setRequestMarshaller(ProtoUtils.marshaller(requestPrototype))
            .setResponseMarshaller(ProtoUtils.marshaller(Book.getDefaultInstance()))
            .build();
    }

}
