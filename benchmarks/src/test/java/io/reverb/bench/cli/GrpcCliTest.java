package io.reverb.bench.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.grpc.Grpc;
import io.grpc.InsecureServerCredentials;
import io.grpc.Server;
import io.grpc.protobuf.services.HealthStatusManager;
import io.grpc.protobuf.services.ProtoReflectionServiceV1;
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
 * through grpc-java ({@link ShopFixture}; the same calls as {@link ReverbCliTest} makes over {@code shm://}).
 */
class GrpcCliTest
{
    private static final ObjectMapper JSON = new ObjectMapper();

    private static Server server;
    private static String uri;

    @BeforeAll
    static void startServer() throws IOException
    {
        final HealthStatusManager health = new HealthStatusManager();
        server = Grpc.newServerBuilderForPort(0, InsecureServerCredentials.create())
            .addService(new ShopFixture().grpcShop())
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
}
