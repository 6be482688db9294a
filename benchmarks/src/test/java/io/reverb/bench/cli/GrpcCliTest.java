package io.reverb.bench.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.google.protobuf.Any;
import com.google.protobuf.Descriptors.FileDescriptor;
import io.grpc.Context;
import io.grpc.Contexts;
import io.grpc.Grpc;
import io.grpc.InsecureServerCredentials;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Server;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.ServerInterceptors;
import io.grpc.ServerServiceDefinition;
import io.grpc.ServiceDescriptor;
import io.grpc.Status;
import io.grpc.protobuf.ProtoFileDescriptorSupplier;
import io.grpc.protobuf.ProtoUtils;
import io.grpc.protobuf.services.HealthStatusManager;
import io.grpc.protobuf.services.ProtoReflectionServiceV1;
import io.grpc.stub.ServerCalls;
import io.reverb.bench.clitest.Item;
import io.reverb.bench.clitest.ItemRequest;
import io.reverb.bench.clitest.ListRequest;
import io.reverb.bench.clitest.Note;
import io.reverb.bench.clitest.ShopOuterClass;
import io.reverb.bench.cli.ReverbCliTest.Run;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * reverb-cli against {@code grpc://}: a grpc-java server over Netty (loopback, plaintext) with grpc-java's own
 * reflection service ({@code ProtoReflectionServiceV1}) and health service, and the test's Shop service served
 * through grpc-java (the same calls as {@link ReverbCliTest} makes over {@code shm://}).
 */
class GrpcCliTest
{
    private static final Metadata.Key<String> NOTE = Metadata.Key.of("x-note", Metadata.ASCII_STRING_MARSHALLER);
    private static final Context.Key<String> NOTE_IN_CONTEXT = Context.key("x-note");
    private static final ObjectMapper JSON = new ObjectMapper();

    private static Server server;
    private static String uri;

    @BeforeAll
    static void startServer() throws IOException
    {
        final HealthStatusManager health = new HealthStatusManager();
        server = Grpc.newServerBuilderForPort(0, InsecureServerCredentials.create())
            .addService(ServerInterceptors.intercept(shop(), new NoteInterceptor()))
            .addService(health.getHealthService())
            .addService(ProtoReflectionServiceV1.newInstance())
            .build().start();
        uri = "grpc://127.0.0.1:" + server.getPort();
    }

    @AfterAll
    static void stopServer() throws InterruptedException
    {
        server.shutdownNow();
        assertThat(server.awaitTermination(30, TimeUnit.SECONDS)).isTrue();
    }

    @Test
    void shouldListAndDescribeThroughGrpcJavasReflection()
    {
        final Run list = ReverbCliTest.run("list", uri);
        assertThat(list.code).as(list.err).isZero();
        assertThat(list.outLines()).containsExactly("grpc.health.v1.Health", "grpc.reflection.v1.ServerReflection",
            "reverb.bench.clitest.Shop");

        final Run describe = ReverbCliTest.run("describe", uri, "grpc.health.v1.Health.Check");
        assertThat(describe.code).as(describe.err).isZero();
        assertThat(describe.out).isEqualTo("grpc.health.v1.Health.Check is a method:\n" +
            "rpc Check ( .grpc.health.v1.HealthCheckRequest ) returns ( .grpc.health.v1.HealthCheckResponse );\n");
    }

    @Test
    void shouldCallUnaryAndServerStreamingOverGrpc() throws IOException
    {
        final Run check = ReverbCliTest.run("call", uri, "grpc.health.v1.Health/Check", "-d", "{}");
        assertThat(check.code).as(check.err).isZero();
        assertThat(JSON.readTree(check.out).get("status").asText()).isEqualTo("SERVING");

        final Run item = ReverbCliTest.run("call", uri, "reverb.bench.clitest.Shop/GetItem", "-d", "{\"name\":\"cup\"}",
            "-H", "X-Note: red", "--deadline", "20s");
        assertThat(item.code).as(item.err).isZero();
        final JsonNode json = JSON.readTree(item.out);
        assertThat(json.get("name").asText()).isEqualTo("cup");
        assertThat(json.get("extra").get("text").asText()).isEqualTo("red");

        final Run stream = ReverbCliTest.run("call", uri, "reverb.bench.clitest.Shop/ListItems",
            "-d", "{\"count\": 4, \"prefix\": \"g\"}");
        assertThat(stream.code).as(stream.err).isZero();
        final List<String> names = new ArrayList<>();
        JSON.readerFor(JsonNode.class).<JsonNode>readValues(stream.out)
            .forEachRemaining(node -> names.add(node.get("name").asText()));
        assertThat(names).containsExactly("g0", "g1", "g2", "g3");
    }

    @Test
    void shouldExitOneOnAFailedCallAndThreeWithoutAServer()
    {
        final Run unknown = ReverbCliTest.run("call", uri, "grpc.health.v1.Health/Check", "-d", "{\"service\":\"x\"}");
        assertThat(unknown.code).isEqualTo(1);
        assertThat(unknown.err).startsWith("ERROR: NOT_FOUND: ");

        final Run nope = ReverbCliTest.run("describe", uri, "grpc.health.v1.Nope");
        assertThat(nope.code).isEqualTo(1);
        assertThat(nope.err).startsWith("ERROR: NOT_FOUND: ");

        // a port nothing listens on: the server's own, after a server on it has stopped would race; port 1 is
        // privileged and unused on the test machine's loopback
        final Run none = ReverbCliTest.run("list", "grpc://127.0.0.1:1", "--deadline", "10s");
        assertThat(none.code).as(none.err).isEqualTo(3);
        assertThat(none.err).startsWith("ERROR: cannot reach the reflection service at grpc://127.0.0.1:1: " +
            "UNAVAILABLE");
    }

    private static ServerServiceDefinition shop()
    {
        final FileDescriptor file = ShopOuterClass.getDescriptor();
        final MethodDescriptor<ItemRequest, Item> getItem = MethodDescriptor.<ItemRequest, Item>newBuilder()
            .setType(MethodDescriptor.MethodType.UNARY)
            .setFullMethodName("reverb.bench.clitest.Shop/GetItem")
            .setRequestMarshaller(ProtoUtils.marshaller(ItemRequest.getDefaultInstance()))
            .setResponseMarshaller(ProtoUtils.marshaller(Item.getDefaultInstance()))
            .build();
        final MethodDescriptor<ListRequest, Item> listItems = MethodDescriptor.<ListRequest, Item>newBuilder()
            .setType(MethodDescriptor.MethodType.SERVER_STREAMING)
            .setFullMethodName("reverb.bench.clitest.Shop/ListItems")
            .setRequestMarshaller(ProtoUtils.marshaller(ListRequest.getDefaultInstance()))
            .setResponseMarshaller(ProtoUtils.marshaller(Item.getDefaultInstance()))
            .build();
        final ServiceDescriptor descriptor = ServiceDescriptor.newBuilder("reverb.bench.clitest.Shop")
            .setSchemaDescriptor((ProtoFileDescriptorSupplier)() -> file)
            .addMethod(getItem)
            .addMethod(listItems)
            .build();
        return ServerServiceDefinition.builder(descriptor)
            .addMethod(getItem, ServerCalls.asyncUnaryCall((request, responses) ->
            {
                if ("missing".equals(request.getName()))
                {
                    responses.onError(Status.NOT_FOUND.withDescription("no item named missing").asException());
                    return;
                }
                responses.onNext(Item.newBuilder().setName(request.getName())
                    .setPriceCents(100L * request.getName().length())
                    .setExtra(Any.pack(Note.newBuilder()
                        .setText(String.valueOf(NOTE_IN_CONTEXT.get())).build()))
                    .build());
                responses.onCompleted();
            }))
            .addMethod(listItems, ServerCalls.asyncServerStreamingCall((request, responses) ->
            {
                for (int i = 0; i < request.getCount(); i++)
                {
                    responses.onNext(Item.newBuilder().setName(request.getPrefix() + i).setPriceCents(i).build());
                }
                responses.onCompleted();
            }))
            .build();
    }

    /** Puts the x-note header where the Shop handler reads it. */
    private static final class NoteInterceptor implements ServerInterceptor
    {
        @Override
        public <Q, R> ServerCall.Listener<Q> interceptCall(final ServerCall<Q, R> call, final Metadata headers,
            final ServerCallHandler<Q, R> next)
        {
            return Contexts.interceptCall(Context.current().withValue(NOTE_IN_CONTEXT, headers.get(NOTE)), call,
                headers, next);
        }
    }
}
