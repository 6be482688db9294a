package io.reverb.bench.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.grpc.Server;
import io.grpc.protobuf.services.HealthStatusManager;
import io.grpc.protobuf.services.ProtoReflectionServiceV1;
import io.reverb.bench.cli.ReverbCliTest.Run;
import io.reverb.grpc.ReverbServerBuilder;
import io.reverb.rpc.transport.ResourceUsage;
import io.reverb.rpc.transport.Transports;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Reflection through reverb-grpc: a grpc-java server built with {@link ReverbServerBuilder} on {@code shm://}, serving
 * grpc-java's own reflection service ({@link ProtoReflectionServiceV1}, grpc-services), its health service and the
 * test's Shop service; reverb-cli lists, describes and calls it through Reverb's native channel ({@code shm://NAME})
 * and through grpc-java's channel on Reverb ({@code grpc+shm://NAME}). Every transport buffer is back at the end.
 */
class ReverbGrpcReflectionTest
{
    private static final Duration TIMEOUT = Duration.ofSeconds(30);
    private static final ObjectMapper JSON = new ObjectMapper();

    private static final ShopFixture SHOP = new ShopFixture();
    private static String uri;
    private static ResourceUsage usage;
    private static Server server;

    @BeforeAll
    static void startServer() throws IOException
    {
        uri = "shm://reverb-cli-grpc-" + ProcessHandle.current().pid();
        usage = Transports.providerFor(Transports.parse(uri)).resourceUsage();
        server = ReverbServerBuilder.forAddress(uri)
            .addService(SHOP.grpcShop())
            .addService(new HealthStatusManager().getHealthService())
            .addService(ProtoReflectionServiceV1.newInstance())
            .build().start();
    }

    @AfterAll
    static void stopServerAndCheckBuffers() throws InterruptedException
    {
        server.shutdown();
        assertThat(server.awaitTermination(TIMEOUT.toSeconds(), TimeUnit.SECONDS)).isTrue();
        // buffers come back as the connections close: wait for that (a safety-net limit, not a timing assertion)
        final long deadline = System.nanoTime() + TIMEOUT.toNanos();
        while (usage.buffersInUse() != 0 && System.nanoTime() < deadline)
        {
            Thread.sleep(10);
        }
        assertThat(usage.buffersInUse()).as(usage.describe()).isZero();
    }

    @Test
    void shouldListAndDescribeThroughGrpcJavasReflectionOverReverb()
    {
        for (final String address : List.of(uri, "grpc+" + uri))
        {
            final Run list = ReverbCliTest.run("list", address);
            assertThat(list.code).as(address + ": " + list.err).isZero();
            assertThat(list.outLines()).as(address).containsExactly("grpc.health.v1.Health",
                "grpc.reflection.v1.ServerReflection", ShopFixture.SERVICE);

            final Run methods = ReverbCliTest.run("list", address, ShopFixture.SERVICE);
            assertThat(methods.code).as(address + ": " + methods.err).isZero();
            assertThat(methods.outLines()).as(address).containsExactly(ShopFixture.SERVICE + ".GetItem",
                ShopFixture.SERVICE + ".ListItems");

            final Run describe = ReverbCliTest.run("describe", address, "reverb.bench.clitest.Item");
            assertThat(describe.code).as(address + ": " + describe.err).isZero();
            assertThat(describe.out).as(address).isEqualTo("reverb.bench.clitest.Item is a message:\n" +
                "message Item {\n" +
                "  string name = 1;\n" +
                "  int64 price_cents = 2;\n" +
                "  .google.protobuf.Any extra = 3;\n" +
                "}\n");
        }
    }

    @Test
    void shouldCallUnaryAndServerStreamingThroughReflectionOverReverb() throws IOException
    {
        for (final String address : List.of(uri, "grpc+" + uri))
        {
            final String note = address.startsWith("grpc+") ? "grpc-java" : "native";
            final Run item = ReverbCliTest.run("call", address, ShopFixture.SERVICE + "/GetItem",
                "-d", "{\"name\":\"mug\"}", "-H", "x-note: " + note, "--deadline", "20s");
            assertThat(item.code).as(address + ": " + item.err).isZero();
            final JsonNode json = JSON.readTree(item.out);
            assertThat(json.get("name").asText()).isEqualTo("mug");
            assertThat(json.get("priceCents").asText()).isEqualTo("300");
            assertThat(json.get("extra").get("text").asText()).isEqualTo(note);
            assertThat(SHOP.calls("get:mug:" + note)).isEqualTo(1);

            final Run stream = ReverbCliTest.run("call", address, ShopFixture.SERVICE + "/ListItems",
                "-d", "{\"count\": 3, \"prefix\": \"" + note + "\"}");
            assertThat(stream.code).as(address + ": " + stream.err).isZero();
            final List<String> names = new ArrayList<>();
            JSON.readerFor(JsonNode.class).<JsonNode>readValues(stream.out)
                .forEachRemaining(node -> names.add(node.get("name").asText()));
            assertThat(names).containsExactly(note + "0", note + "1", note + "2");

            final Run health = ReverbCliTest.run("call", address, "grpc.health.v1.Health/Check", "-d", "{}");
            assertThat(health.code).as(address + ": " + health.err).isZero();
            assertThat(JSON.readTree(health.out).get("status").asText()).isEqualTo("SERVING");

            final Run missing = ReverbCliTest.run("call", address, ShopFixture.SERVICE + "/GetItem",
                "-d", "{\"name\":\"missing\"}");
            assertThat(missing.code).isEqualTo(1);
            assertThat(missing.err.trim()).isEqualTo("ERROR: NOT_FOUND: no item named missing");
        }
    }
}
