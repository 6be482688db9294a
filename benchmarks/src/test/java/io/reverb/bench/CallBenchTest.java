package io.reverb.bench;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.google.protobuf.DescriptorProtos.FileDescriptorSet;
import com.google.protobuf.Descriptors.FileDescriptor;
import io.grpc.Grpc;
import io.grpc.InsecureServerCredentials;
import io.grpc.Server;
import io.grpc.protobuf.services.ProtoReflectionServiceV1;
import io.reverb.bench.cli.ShopFixture;
import io.reverb.bench.clitest.ShopOuterClass;
import io.reverb.bench.load.RunResult;
import io.reverb.bench.report.CsvReport;
import io.reverb.bench.report.JsonReport;
import io.reverb.rpc.RpcServer;
import io.reverb.rpc.transport.ResourceUsage;
import io.reverb.rpc.transport.Transports;
import io.reverb.services.reflection.ReflectionService;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * reverb-bench against any service ({@code --call}): the test's Shop service (generated, not the echo service) on a
 * native Reverb server over {@code shm://} with Reverb's reflection service, and on a grpc-java server over Netty
 * ({@code grpc://}) with grpc-java's. Each run is checked by counts: the report's calls ({@code count == -n}, all OK,
 * the status distribution, messages of server-streaming calls) against the calls each server received, with the
 * metadata it received; descriptors from reflection, a protoset and a {@code .proto} file; closed and open loop; JSON,
 * CSV and HTML out. No timing is asserted. Every shm transport buffer is back at the end.
 */
class CallBenchTest
{
    private static final Duration TIMEOUT = Duration.ofSeconds(30);
    private static final Path PROTOS = Path.of("src", "test", "proto").toAbsolutePath();
    private static final String GET_ITEM = ShopFixture.SERVICE + "/GetItem";
    private static final String LIST_ITEMS = ShopFixture.SERVICE + "/ListItems";
    private static final ObjectMapper JSON = new ObjectMapper();

    private static final ShopFixture SHOP = new ShopFixture();
    private static String shm;
    private static String grpc;
    private static ResourceUsage usage;
    private static RpcServer reverbServer;
    private static Server grpcServer;

    private final ByteArrayOutputStream out = new ByteArrayOutputStream();
    private final ByteArrayOutputStream err = new ByteArrayOutputStream();

    @BeforeAll
    static void startServers() throws IOException
    {
        shm = "shm://reverb-bench-call-" + ProcessHandle.current().pid();
        usage = Transports.providerFor(Transports.parse(shm)).resourceUsage();
        reverbServer = ReflectionService.addTo(RpcServer.builder(shm).addService(SHOP.nativeShop())).build().start();
        grpcServer = Grpc.newServerBuilderForPort(0, InsecureServerCredentials.create())
            .addService(SHOP.grpcShop())
            .addService(ProtoReflectionServiceV1.newInstance())
            .build().start();
        grpc = "grpc://127.0.0.1:" + grpcServer.getPort();
    }

    @AfterAll
    static void stopServersAndCheckBuffers() throws InterruptedException
    {
        grpcServer.shutdownNow();
        assertThat(grpcServer.awaitTermination(TIMEOUT.toSeconds(), TimeUnit.SECONDS)).isTrue();
        reverbServer.shutdown();
        assertThat(reverbServer.awaitTermination(TIMEOUT)).isTrue();
        // buffers come back as the connections close: wait for that (a safety-net limit, not a timing assertion)
        final long deadline = System.nanoTime() + TIMEOUT.toNanos();
        while (usage.buffersInUse() != 0 && System.nanoTime() < deadline)
        {
            Thread.sleep(10);
        }
        assertThat(usage.buffersInUse()).as(usage.describe()).isZero();
    }

    private int run(final String... args) throws Exception
    {
        return ReverbBench.run(args, new PrintStream(out, true, StandardCharsets.UTF_8),
            new PrintStream(err, true, StandardCharsets.UTF_8));
    }

    private String stdout()
    {
        return out.toString(StandardCharsets.UTF_8);
    }

    private String stderr()
    {
        return err.toString(StandardCharsets.UTF_8);
    }

    @Test
    void shouldCallAUnaryMethodFoundByReflectionOverShmAndGrpcAndCountEveryCall() throws Exception
    {
        final int status = run("--uri", shm, "--uri", grpc, "--call", GET_ITEM, "-d", "{\"name\": \"reflected\"}",
            "-m", "{\"x-note\": \"bench\"}", "-n", "200", "-c", "4", "--connections", "2", "--warmup", "0",
            "--format", "json", "-q");

        assertThat(status).as(stderr()).isZero();
        final JsonNode root = JSON.readTree(stdout());
        final List<RunResult> runs = JsonReport.read(stdout());
        assertThat(runs).hasSize(2);
        for (final RunResult r : runs)
        {
            assertThat(r.count).as(r.label).isEqualTo(200);
            assertThat(r.ok).as(r.label).isEqualTo(200);
            assertThat(r.messages).as(r.label).isEqualTo(200);
            assertThat(r.latency.getTotalCount()).as(r.label).isEqualTo(200);
            assertThat(r.statuses).as(r.label).isEqualTo(Map.of("OK", 200L));
            assertThat(r.kind).isEqualTo("unary");
            assertThat(r.concurrency).isEqualTo(4);
            assertThat(r.server).isEqualTo("none");
            // {"name": "reflected"}: field 1, length 9
            assertThat(r.payloadSize).isEqualTo(11);
            assertThat(r.label).endsWith(" " + GET_ITEM);
        }
        assertThat(runs.get(0).framework).isEqualTo("reverb");
        assertThat(runs.get(0).uri).isEqualTo(shm);
        assertThat(runs.get(1).framework).isEqualTo("grpc-java");
        assertThat(runs.get(1).uri).isEqualTo(grpc);
        // both servers got every call, each with the metadata
        assertThat(SHOP.calls("get:reflected:bench")).isEqualTo(400);
        assertThat(SHOP.calls("get:reflected:null")).isZero();
        // the same method and shape on both: the report compares them
        assertThat(root.get("comparisons")).hasSize(1);
        assertThat(root.get("comparisons").get(0).get("baseline").asText()).isEqualTo(runs.get(1).label);
    }

    @Test
    void shouldAlternateTheServersRoundByRound() throws Exception
    {
        final int status = run("--uri", shm, "--uri", grpc, "--call", GET_ITEM, "-d", "{\"name\": \"rounds\"}",
            "-n", "100", "--rounds", "2", "--warmup", "0", "--format", "json", "-q");

        assertThat(status).as(stderr()).isZero();
        final List<RunResult> runs = JsonReport.read(stdout());
        assertThat(runs).extracting(r -> r.framework + " " + r.round)
            .containsExactly("reverb 1", "grpc-java 1", "reverb 2", "grpc-java 2");
        assertThat(runs).allSatisfy(r -> assertThat(r.label).endsWith(GET_ITEM + " #" + r.round));
        assertThat(runs).allSatisfy(r -> assertThat(r.ok).isEqualTo(100));
        assertThat(SHOP.calls("get:rounds:null")).isEqualTo(400);
        // each round's Reverb run against that round's grpc-java run
        assertThat(JSON.readTree(stdout()).get("comparisons")).hasSize(2);
    }

    @Test
    void shouldStreamWithAProtoFileAndCountEveryMessage(@TempDir final Path dir) throws Exception
    {
        final Path csv = dir.resolve("stream.csv");
        final int status = run("--uri", shm, "--call", LIST_ITEMS, "--proto", "reverb/bench/clitest/shop.proto",
            "-i", "/nonexistent," + PROTOS, "-d", "{\"count\": 5, \"prefix\": \"proto\"}", "-n", "60", "-c", "3",
            "--warmup", "0", "--format", "csv", "-o", csv.toString(), "-q");

        assertThat(status).as(stderr()).isZero();
        final List<String> lines = Files.readAllLines(csv);
        assertThat(lines).hasSize(2);
        assertThat(lines.get(0)).isEqualTo(CsvReport.HEADER);
        final String[] cells = lines.get(1).split(",");
        final List<String> header = List.of(CsvReport.HEADER.split(","));
        assertThat(cells[header.indexOf("kind")]).isEqualTo("server-streaming");
        assertThat(cells[header.indexOf("stream_messages")]).isEqualTo("5");
        assertThat(cells[header.indexOf("count")]).isEqualTo("60");
        assertThat(cells[header.indexOf("ok")]).isEqualTo("60");
        assertThat(cells[header.indexOf("errors")]).isEqualTo("0");
        assertThat(SHOP.calls("list:proto")).isEqualTo(60);
    }

    @Test
    void shouldRunAnOpenLoopOverGrpcWithAProtosetAndWriteTheHtmlReport(@TempDir final Path dir) throws Exception
    {
        final Path protoset = dir.resolve("shop.protoset");
        final FileDescriptorSet.Builder set = FileDescriptorSet.newBuilder();
        for (final FileDescriptor file : ShopOuterClass.getDescriptor().getDependencies())
        {
            set.addFile(file.toProto());
        }
        set.addFile(ShopOuterClass.getDescriptor().toProto());
        Files.write(protoset, set.build().toByteArray());
        final Path html = dir.resolve("report.html");
        final Path request = dir.resolve("request.json");
        Files.writeString(request, "{\"name\": \"paced\"}");

        final int status = run("--uri", grpc, "--call", GET_ITEM, "--protoset", protoset.toString(),
            "--data-file", request.toString(), "-n", "100", "--rps", "2000", "-c", "8", "--warmup", "0",
            "--format", "json", "--html", html.toString(), "-q");

        assertThat(status).as(stderr()).isZero();
        final RunResult r = JsonReport.read(stdout()).get(0);
        assertThat(r.count).isEqualTo(100);
        assertThat(r.ok).isEqualTo(100);
        assertThat(r.rps).isEqualTo(2000);
        assertThat(r.serviceTime).isNotNull();
        assertThat(r.serviceTime.getTotalCount()).isEqualTo(100);
        assertThat(SHOP.calls("get:paced:null")).isEqualTo(100);
        assertThat(Files.readString(html)).contains("reverb-bench: " + GET_ITEM).contains("grpc-java netty " + GET_ITEM);
    }

    @Test
    void shouldCountFailedCallsByStatusAndExitOne() throws Exception
    {
        final int status = run("--uri", shm, "--call", GET_ITEM, "-d", "{\"name\": \"missing\"}", "-n", "30",
            "--warmup", "0", "--format", "json", "-q");

        assertThat(status).isEqualTo(1);
        final RunResult r = JsonReport.read(stdout()).get(0);
        assertThat(r.count).isEqualTo(30);
        assertThat(r.ok).isZero();
        assertThat(r.statuses).isEqualTo(Map.of("NOT_FOUND", 30L));
        assertThat(SHOP.calls("get:missing:null")).isEqualTo(30);
        assertThat(stderr()).contains("30 of 30 calls failed; the first: ").contains("no item named missing");
    }

    @Test
    void shouldSayWhatIsWrongWithTheMethodOrTheRequest() throws Exception
    {
        assertThat(run("--uri", shm, "--call", ShopFixture.SERVICE + "/Nope", "-n", "1", "-q")).isEqualTo(1);
        assertThat(stderr()).contains("ERROR: NOT_FOUND: service " + ShopFixture.SERVICE + " has no method Nope");

        assertThatThrownBy(() -> run("--uri", grpc, "--call",
            "grpc.reflection.v1.ServerReflection/ServerReflectionInfo", "-n", "1", "-q"))
            .isInstanceOf(IllegalArgumentException.class)
            .hasMessageContaining("is BIDI_STREAMING: reverb-bench calls unary and server-streaming methods only");

        assertThatThrownBy(() -> run("--uri", shm, "--call", GET_ITEM, "-d", "{\"colour\": 1}", "-n", "1", "-q"))
            .isInstanceOf(IllegalArgumentException.class)
            .hasMessageStartingWith("bad request JSON for reverb.bench.clitest.ItemRequest: ");
    }

    @Test
    void shouldRefuseOptionsThatDoNotGoTogether()
    {
        assertThatThrownBy(() -> run("--call", GET_ITEM, "-n", "1"))
            .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("--call needs the server: --uri URI");
        assertThatThrownBy(() -> run("--uri", shm, "--call", GET_ITEM, "--server", "same-process"))
            .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("--server none only");
        assertThatThrownBy(() -> run("--uri", shm, "--call", GET_ITEM, "--payload", "1k"))
            .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("the method decides the kind");
        assertThatThrownBy(() -> run("--uri", shm, "-d", "{}"))
            .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("go with --call");
        assertThatThrownBy(() -> run("--uri", shm, "--call", GET_ITEM, "-m", "[1]"))
            .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("-m takes a JSON object");
        assertThatThrownBy(() -> run("--uri", shm, "--call", GET_ITEM, "--reflect", "--protoset", "x"))
            .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("only one");
        assertThatThrownBy(() -> run("--uri", "inproc://x", "--call", GET_ITEM))
            .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("lives in one process");
    }

    @Test
    void shouldDescribeTheModeInItsHelp() throws Exception
    {
        assertThat(run("--help")).isZero();
        assertThat(stdout()).contains("--call pkg.Svc/Method").contains("--proto FILE").contains("--connections N")
            .contains("-m, --metadata JSON");
    }
}
