package io.reverb.bench.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.google.protobuf.DescriptorProtos.FileDescriptorSet;
import com.google.protobuf.Descriptors.FileDescriptor;
import io.reverb.bench.clitest.ShopOuterClass;
import io.reverb.rpc.RpcServer;
import io.reverb.rpc.transport.ResourceUsage;
import io.reverb.rpc.transport.Transports;
import io.reverb.services.reflection.ReflectionService;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * reverb-cli in this process ({@link ReverbCli#execute}) against a Reverb server over {@code shm://} serving a
 * generated service that is not the echo service ({@code reverb.bench.clitest.Shop}) and the reflection service:
 * list, describe, unary and server-streaming calls with JSON, metadata and {@code Any}, a protoset instead of
 * reflection, and each exit code. Every transport buffer is back at the end.
 */
class ReverbCliTest
{
    private static final Duration TIMEOUT = Duration.ofSeconds(30);
    private static final ObjectMapper JSON = new ObjectMapper();
    /** The test protos, from the module's directory (Surefire's working directory). */
    private static final Path PROTOS = Path.of("src", "test", "proto").toAbsolutePath();

    private static String uri;
    private static ResourceUsage usage;
    private static RpcServer server;

    @BeforeAll
    static void startServer()
    {
        uri = "shm://reverb-cli-" + ProcessHandle.current().pid();
        usage = Transports.providerFor(Transports.parse(uri)).resourceUsage();
        server = ReflectionService.addTo(RpcServer.builder(uri).addService(new ShopFixture().nativeShop())).build()
            .start();
    }

    @AfterAll
    static void stopServerAndCheckBuffers() throws InterruptedException
    {
        server.shutdown();
        assertThat(server.awaitTermination(TIMEOUT)).isTrue();
        // buffers come back as the connections close: wait for that (a safety-net limit, not a timing assertion)
        final long deadline = System.nanoTime() + TIMEOUT.toNanos();
        while (usage.buffersInUse() != 0 && System.nanoTime() < deadline)
        {
            Thread.sleep(10);
        }
        assertThat(usage.buffersInUse()).as(usage.describe()).isZero();
    }

    @Test
    void shouldListServicesAndMethods()
    {
        final Run services = run("list", uri);
        assertThat(services.code).as(services.err).isZero();
        assertThat(services.outLines()).containsExactly("grpc.reflection.v1.ServerReflection",
            "reverb.bench.clitest.Shop");

        final Run methods = run("list", uri, "reverb.bench.clitest.Shop");
        assertThat(methods.code).as(methods.err).isZero();
        assertThat(methods.outLines()).containsExactly("reverb.bench.clitest.Shop.GetItem",
            "reverb.bench.clitest.Shop.ListItems");
    }

    @Test
    void shouldDescribeServiceMethodAndMessage()
    {
        final Run service = run("describe", uri, "reverb.bench.clitest.Shop");
        assertThat(service.code).as(service.err).isZero();
        assertThat(service.out).isEqualTo("reverb.bench.clitest.Shop is a service:\n" +
            "service Shop {\n" +
            "  rpc GetItem ( .reverb.bench.clitest.ItemRequest ) returns ( .reverb.bench.clitest.Item );\n" +
            "  rpc ListItems ( .reverb.bench.clitest.ListRequest ) returns ( stream .reverb.bench.clitest.Item );\n" +
            "}\n");

        final Run method = run("describe", uri, "reverb.bench.clitest.Shop.ListItems");
        assertThat(method.code).as(method.err).isZero();
        assertThat(method.out).isEqualTo("reverb.bench.clitest.Shop.ListItems is a method:\n" +
            "rpc ListItems ( .reverb.bench.clitest.ListRequest ) returns ( stream .reverb.bench.clitest.Item );\n");

        final Run all = run("describe", uri);
        assertThat(all.code).as(all.err).isZero();
        assertThat(all.out).startsWith("grpc.reflection.v1.ServerReflection is a service:\n")
            .contains("rpc ServerReflectionInfo ( stream .grpc.reflection.v1.ServerReflectionRequest ) returns ( " +
                "stream .grpc.reflection.v1.ServerReflectionResponse );\n")
            .endsWith(service.out);

        final Run message = run("describe", uri, "reverb.bench.clitest.Item");
        assertThat(message.code).as(message.err).isZero();
        assertThat(message.out).isEqualTo("reverb.bench.clitest.Item is a message:\n" +
            "message Item {\n" +
            "  string name = 1;\n" +
            "  int64 price_cents = 2;\n" +
            "  .google.protobuf.Any extra = 3;\n" +
            "}\n");
    }

    @Test
    void shouldCallUnaryWithJsonMetadataAndAny() throws IOException
    {
        final Run call = run("call", uri, "reverb.bench.clitest.Shop/GetItem", "-d", "{\"name\": \"pen\"}",
            "-H", "x-note: blue", "--deadline", "20s");
        assertThat(call.code).as(call.err).isZero();
        final JsonNode item = JSON.readTree(call.out);
        assertThat(item.get("name").asText()).isEqualTo("pen");
        assertThat(item.get("priceCents").asText()).isEqualTo("300");
        assertThat(item.get("extra").get("@type").asText()).isEqualTo("type.googleapis.com/reverb.bench.clitest.Note");
        assertThat(item.get("extra").get("text").asText()).isEqualTo("blue");
    }

    @Test
    void shouldCallServerStreamingWithJsonFromStdin() throws IOException
    {
        final Run call = runWithStdin("{\"count\": 3, \"prefix\": \"p\"}",
            "call", uri, "reverb.bench.clitest.Shop/ListItems", "-d", "@-");
        assertThat(call.code).as(call.err).isZero();
        final List<String> names = new ArrayList<>();
        JSON.readerFor(JsonNode.class).<JsonNode>readValues(call.out)
            .forEachRemaining(node -> names.add(node.get("name").asText()));
        assertThat(names).containsExactly("p0", "p1", "p2");
    }

    @Test
    void shouldReadJsonFromAFile(@TempDir final Path dir) throws IOException
    {
        final Path file = dir.resolve("request.json");
        Files.writeString(file, "{\"count\": 2, \"prefix\": \"f\"}");
        final Run call = run("call", uri, "reverb.bench.clitest.Shop/ListItems", "-d", "@" + file);
        assertThat(call.code).as(call.err).isZero();
        assertThat(call.out).contains("\"f0\"").contains("\"f1\"").doesNotContain("\"f2\"");
    }

    @Test
    void shouldExitOneOnUnknownMethodOrServiceOrAFailedCall()
    {
        final Run method = run("call", uri, "reverb.bench.clitest.Shop/Nope", "-d", "{}");
        assertThat(method.code).isEqualTo(1);
        assertThat(method.err.trim()).isEqualTo("ERROR: NOT_FOUND: service reverb.bench.clitest.Shop has no method " +
            "Nope");
        assertThat(method.out).isEmpty();

        final Run service = run("call", uri, "reverb.bench.clitest.Nope/Get", "-d", "{}");
        assertThat(service.code).isEqualTo(1);
        assertThat(service.err).startsWith("ERROR: NOT_FOUND: ").contains("reverb.bench.clitest.Nope");

        final Run failed = run("call", uri, "reverb.bench.clitest.Shop/GetItem", "-d", "{\"name\": \"missing\"}");
        assertThat(failed.code).isEqualTo(1);
        assertThat(failed.err.trim()).isEqualTo("ERROR: NOT_FOUND: no item named missing");
        assertThat(failed.out).isEmpty();
    }

    @Test
    void shouldExitTwoOnBadJsonOrBadUsage()
    {
        final Run malformed = run("call", uri, "reverb.bench.clitest.Shop/GetItem", "-d", "{\"name\": ");
        assertThat(malformed.code).isEqualTo(2);
        assertThat(malformed.err).startsWith("ERROR: bad request JSON for reverb.bench.clitest.ItemRequest: ");

        final Run unknownField = run("call", uri, "reverb.bench.clitest.Shop/GetItem", "-d", "{\"colour\": 1}");
        assertThat(unknownField.code).isEqualTo(2);
        assertThat(unknownField.err).startsWith("ERROR: bad request JSON for reverb.bench.clitest.ItemRequest: ")
            .contains("colour");

        final Run bidi = run("call", uri, "grpc.reflection.v1.ServerReflection/ServerReflectionInfo", "-d", "{}");
        assertThat(bidi.code).isEqualTo(2);
        assertThat(bidi.err).contains("is BIDI_STREAMING: reverb-cli calls unary and server-streaming methods only");

        assertThat(run().code).isEqualTo(2);
        assertThat(run("call", uri).code).isEqualTo(2);
        assertThat(run("call", uri, "Shop", "-d", "{}").code).isEqualTo(2);
        assertThat(run("call", uri, "reverb.bench.clitest.Shop/GetItem", "-H", "no colon").code).isEqualTo(2);
        assertThat(run("call", uri, "reverb.bench.clitest.Shop/GetItem", "-H", "bad name: x").err)
            .contains("a metadata name has only");
        assertThat(run("list", uri, "--deadline", "soon").code).isEqualTo(2);
        assertThat(run("list", uri, "--deadline", "0s").code).isEqualTo(2);
        final Run inproc = run("list", "inproc://x");
        assertThat(inproc.code).isEqualTo(2);
        assertThat(inproc.err).contains("inproc:// lives in one process");
    }

    @Test
    void shouldPrintHelpForEveryVerb()
    {
        for (final String verb : new String[] {"list", "describe", "call"})
        {
            final Run help = run(verb, "--help");
            assertThat(help.code).isZero();
            assertThat(help.out).contains("Usage: reverb-cli " + verb).contains("--protoset").contains("--proto=FILE")
                .contains("--import-path");
        }
        final Run top = run("--help");
        assertThat(top.code).isZero();
        assertThat(top.out).contains("FileDescriptorSet").contains("Exit codes");
    }

    @Test
    void shouldExitThreeWithoutAServer()
    {
        final Run nobody = run("list", "shm://reverb-cli-nobody-" + ProcessHandle.current().pid(), "--deadline", "5s");
        assertThat(nobody.code).as(nobody.err).isEqualTo(3);
        assertThat(nobody.err).startsWith("ERROR: cannot reach the reflection service at shm://reverb-cli-nobody-");
    }

    @Test
    void shouldExitThreeWhenACallWithDescriptorsAtHandCannotConnect(@TempDir final Path dir) throws IOException
    {
        final Path protoset = dir.resolve("shop.protoset");
        final Set<FileDescriptor> files = new LinkedHashSet<>();
        collect(ShopOuterClass.getDescriptor(), files);
        final FileDescriptorSet.Builder set = FileDescriptorSet.newBuilder();
        files.forEach(file -> set.addFile(file.toProto()));
        Files.write(protoset, set.build().toByteArray());

        final Run nobody = run("call", "shm://reverb-cli-nobody-" + ProcessHandle.current().pid(),
            "reverb.bench.clitest.Shop/GetItem", "--protoset", protoset.toString(), "-d", "{}", "--deadline", "5s");
        assertThat(nobody.code).as(nobody.err).isEqualTo(3);
        assertThat(nobody.err).startsWith("ERROR: UNAVAILABLE: ");
        assertThat(nobody.out).isEmpty();

        // the same through grpc-java: over Reverb, and over Netty to a port nobody listens on
        final Run grpcOverReverb = run("call", "grpc+shm://reverb-cli-nobody-" + ProcessHandle.current().pid(),
            "reverb.bench.clitest.Shop/GetItem", "--protoset", protoset.toString(), "-d", "{}", "--deadline", "5s");
        assertThat(grpcOverReverb.code).as(grpcOverReverb.err).isEqualTo(3);
        final int closedPort;
        try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress()))
        {
            closedPort = socket.getLocalPort();
        }
        final Run grpc = run("call", "grpc://127.0.0.1:" + closedPort, "reverb.bench.clitest.Shop/GetItem",
            "--protoset", protoset.toString(), "-d", "{}", "--deadline", "5s");
        assertThat(grpc.code).as(grpc.err).isEqualTo(3);
    }

    @Test
    void shouldUseAProtosetInsteadOfReflection(@TempDir final Path dir) throws IOException
    {
        final Path protoset = dir.resolve("shop.protoset");
        final Set<FileDescriptor> files = new LinkedHashSet<>();
        collect(ShopOuterClass.getDescriptor(), files);
        final FileDescriptorSet.Builder set = FileDescriptorSet.newBuilder();
        files.forEach(file -> set.addFile(file.toProto()));
        Files.write(protoset, set.build().toByteArray());

        final Run list = run("list", uri, "--protoset", protoset.toString());
        assertThat(list.code).as(list.err).isZero();
        assertThat(list.outLines()).containsExactly("reverb.bench.clitest.Shop");

        final Run call = run("call", uri, "reverb.bench.clitest.Shop/GetItem", "--protoset", protoset.toString(),
            "-d", "{\"name\": \"ink\"}");
        assertThat(call.code).as(call.err).isZero();
        assertThat(JSON.readTree(call.out).get("extra").get("text").asText()).isEqualTo("null");

        final Path notASet = dir.resolve("bad.protoset");
        Files.write(notASet, new byte[] {(byte)0xff, (byte)0xff, (byte)0xff});
        final Run bad = run("list", uri, "--protoset", notASet.toString());
        assertThat(bad.code).isEqualTo(2);
        assertThat(bad.err).contains("is not a FileDescriptorSet");
    }

    @Test
    void shouldUseProtoFilesInsteadOfReflection(@TempDir final Path dir) throws IOException
    {
        // with an import path, as protoc names the file; the well-known import (google/protobuf/any.proto) needs none
        final Run list = run("list", uri, "--proto", "reverb/bench/clitest/shop.proto", "-I", PROTOS.toString());
        assertThat(list.code).as(list.err).isZero();
        assertThat(list.outLines()).containsExactly("reverb.bench.clitest.Shop");

        final Run describe = run("describe", uri, "reverb.bench.clitest.ListRequest", "--proto",
            PROTOS.resolve("reverb/bench/clitest/shop.proto").toString(), "--import-path", PROTOS.toString());
        assertThat(describe.code).as(describe.err).isZero();
        assertThat(describe.out).isEqualTo("reverb.bench.clitest.ListRequest is a message:\n" +
            "message ListRequest {\n" +
            "  int32 count = 1;\n" +
            "  string prefix = 2;\n" +
            "}\n");

        // without an import path: the file's own directory
        final Path copy = dir.resolve("shop.proto");
        Files.copy(PROTOS.resolve("reverb/bench/clitest/shop.proto"), copy);
        final Run call = run("call", uri, "reverb.bench.clitest.Shop/GetItem", "--proto", copy.toString(),
            "-d", "{\"name\": \"nib\"}", "-H", "x-note: from a .proto");
        assertThat(call.code).as(call.err).isZero();
        final JsonNode item = JSON.readTree(call.out);
        assertThat(item.get("priceCents").asText()).isEqualTo("300");
        assertThat(item.get("extra").get("text").asText()).isEqualTo("from a .proto");

        final Run stream = run("call", uri, "reverb.bench.clitest.Shop.ListItems", "--proto", copy.toString(),
            "-d", "{\"count\": 2, \"prefix\": \"q\"}");
        assertThat(stream.code).as(stream.err).isZero();
        assertThat(stream.out).contains("\"q0\"").contains("\"q1\"").doesNotContain("\"q2\"");
    }

    @Test
    void shouldExitTwoWithProtocsMessageOnABadProtoFile(@TempDir final Path dir) throws IOException
    {
        final Path broken = dir.resolve("broken.proto");
        Files.writeString(broken, "syntax = \"proto3\";\nmessage Broken { strin name = 1; }\n");
        final Run bad = run("list", uri, "--proto", broken.toString());
        assertThat(bad.code).isEqualTo(2);
        assertThat(bad.err).startsWith("ERROR: protoc could not compile ").contains("broken.proto:2:")
            .contains("\"strin\" is not defined");

        final Run missing = run("list", uri, "--proto", dir.resolve("nowhere.proto").toString());
        assertThat(missing.code).isEqualTo(2);
        assertThat(missing.err).startsWith("ERROR: protoc could not compile ").contains("nowhere.proto");

        final Run noProtoc = run("list", uri, "--proto", broken.toString(), "--protoc", dir.resolve("no-protoc")
            .toString());
        assertThat(noProtoc.code).isEqualTo(2);
        assertThat(noProtoc.err).contains("--protoc " + dir.resolve("no-protoc") + ": no such file");

        final Run both = run("list", uri, "--proto", broken.toString(), "--protoset", broken.toString());
        assertThat(both.code).isEqualTo(2);
        assertThat(both.err).contains("give --protoset or --proto, not both");

        final Run importWithoutProto = run("list", uri, "-I", dir.toString());
        assertThat(importWithoutProto.code).isEqualTo(2);
        assertThat(importWithoutProto.err).contains("go with --proto FILE");
    }

    @Test
    void shouldParseDurations()
    {
        assertThat(ReverbCli.parseDuration("250ms")).isEqualTo(Duration.ofMillis(250));
        assertThat(ReverbCli.parseDuration("1.5s")).isEqualTo(Duration.ofMillis(1500));
        assertThat(ReverbCli.parseDuration("5")).isEqualTo(Duration.ofSeconds(5));
        assertThat(ReverbCli.parseDuration("2m")).isEqualTo(Duration.ofMinutes(2));
        assertThat(ReverbCli.parseDuration("1h")).isEqualTo(Duration.ofHours(1));
    }

    private static void collect(final FileDescriptor file, final Set<FileDescriptor> into)
    {
        for (final FileDescriptor dependency : file.getDependencies())
        {
            collect(dependency, into);
        }
        into.add(file);
    }

    static Run run(final String... args)
    {
        return runWithStdin("", args);
    }

    static Run runWithStdin(final String stdin, final String... args)
    {
        final StringWriter out = new StringWriter();
        final StringWriter err = new StringWriter();
        final int code = ReverbCli.execute(args, new ByteArrayInputStream(stdin.getBytes(StandardCharsets.UTF_8)),
            new PrintWriter(out), new PrintWriter(err));
        return new Run(code, out.toString(), err.toString());
    }

    /** One command line's exit code and output. */
    static final class Run
    {
        final int code;
        final String out;
        final String err;

        Run(final int code, final String out, final String err)
        {
            this.code = code;
            this.out = out;
            this.err = err;
        }

        List<String> outLines()
        {
            return out.isEmpty() ? List.of() : List.of(out.split("\n"));
        }
    }
}
