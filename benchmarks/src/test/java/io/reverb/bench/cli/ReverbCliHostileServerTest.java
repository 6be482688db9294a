package io.reverb.bench.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.google.protobuf.Any;
import io.reverb.bench.clitest.Item;
import io.reverb.bench.clitest.ItemRequest;
import io.reverb.bench.clitest.ShopRpc;
import io.reverb.bench.cli.ReverbCliTest.Run;
import io.reverb.rpc.RpcServer;
import io.reverb.rpc.Status;
import io.reverb.services.reflection.ReflectionService;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Mono;

/**
 * reverb-cli against a server that lies ({@link HostileReflection}) or streams without end: names and errors with
 * terminal escapes come out escaped, import chains too deep, too many or too big descriptor files and a flood of
 * reflection responses end with a clear error, and a call stops at {@code --max-responses}. Each of these failed
 * before the bounds existed (escapes printed raw, chains built or the stack overflowed, responses collected). A file
 * name or an {@code Any} type URL with a newline stays on its error's line, and a {@code json_name} that would break
 * out of its JSON string is refused (each forged a line of output before).
 */
class ReverbCliHostileServerTest
{
    private static final Duration TIMEOUT = Duration.ofSeconds(30);
    private static final AtomicInteger SERVERS = new AtomicInteger();
    private static final ObjectMapper JSON = new ObjectMapper();

    private RpcServer server;

    @AfterEach
    void stopServer() throws InterruptedException
    {
        if (server != null)
        {
            server.shutdown();
            assertThat(server.awaitTermination(TIMEOUT)).isTrue();
        }
    }

    private String serve(final HostileReflection reflection)
    {
        final String uri = "shm://reverb-cli-hostile-" + ProcessHandle.current().pid() + "-" +
            SERVERS.incrementAndGet();
        server = RpcServer.builder(uri).addService(reflection).build().start();
        return uri;
    }

    @Test
    void shouldEscapeNamesAndErrorsFromTheServer()
    {
        final String uri = serve(new HostileReflection(HostileReflection.Mode.ESCAPES, 0));

        final Run list = ReverbCliTest.run("list", uri);
        assertThat(list.code).as(list.err).isZero();
        assertThat(list.out).doesNotContain("\u001b", "\u0007");
        // the forged line stays inside its name: two names, two lines
        assertThat(list.outLines()).containsExactlyInAnyOrder("evil.Svc\\u001b]0;pwned\\u0007\\u001b[2J",
            "evil\\u000aERROR: forged line");

        final Run describe = ReverbCliTest.run("describe", uri, "evil.Svc");
        assertThat(describe.code).isEqualTo(CliException.CALL_FAILED);
        assertThat(describe.err).doesNotContain("\u001b", "\u0007")
            .contains("NOT_FOUND: no such symbol\\u001b]0;pwned\\u0007\\u001b[2J");
    }

    @Test
    void shouldRefuseAnImportChainDeeperThanTheBound()
    {
        final String uri = serve(new HostileReflection(HostileReflection.Mode.DEEP_IMPORTS, 1_000));

        final Run describe = ReverbCliTest.run("describe", uri, "evil.Svc");

        assertThat(describe.code).as(describe.out).isEqualTo(CliException.CALL_FAILED);
        assertThat(describe.err).contains("import more than " + FileBuilder.MAX_IMPORT_DEPTH + " files deep");
    }

    @Test
    void shouldRefuseAnEndlessImportChainFetchedFileByFile()
    {
        final HostileReflection reflection = new HostileReflection(HostileReflection.Mode.ENDLESS_IMPORTS, 0);
        final String uri = serve(reflection);

        final Run describe = ReverbCliTest.run("describe", uri, "evil.Svc");

        assertThat(describe.code).as(describe.out).isEqualTo(CliException.CALL_FAILED);
        assertThat(describe.err).contains("import more than " + FileBuilder.MAX_IMPORT_DEPTH + " files deep");
        // the symbol's file, then one fetch a level: the chain was followed no further than the bound
        assertThat(reflection.sent()).isEqualTo(FileBuilder.MAX_IMPORT_DEPTH);
    }

    @Test
    void shouldRefuseMoreDescriptorBytesThanTheBound()
    {
        final int files = (int)(FileBuilder.MAX_BYTES >> 20) + 4; // each about 1 MiB
        final HostileReflection reflection = new HostileReflection(HostileReflection.Mode.BIG_FILES, files);
        final String uri = serve(reflection);

        final Run describe = ReverbCliTest.run("describe", uri, "evil.Svc");

        assertThat(describe.code).as(describe.out).isEqualTo(CliException.CALL_FAILED);
        assertThat(describe.err).contains("more than " + (FileBuilder.MAX_BYTES >> 20) + " MiB of descriptor files");
        assertThat(reflection.sent()).isLessThan(files + 1);
    }

    @Test
    void shouldStopAFloodOfReflectionResponses()
    {
        final int flood = 10_000;
        final HostileReflection reflection = new HostileReflection(HostileReflection.Mode.FLOOD, flood);
        final String uri = serve(reflection);

        final Run list = ReverbCliTest.run("list", uri);

        assertThat(list.code).isEqualTo(CliException.NO_CONNECTION);
        assertThat(list.err).contains("answered one request with more than one response");
        // the client cancelled after the second: the server stopped within its flow-control credit
        assertThat(reflection.sent()).isLessThan(flood);
    }

    @Test
    void shouldStopACallAtMaxResponses() throws IOException
    {
        final String uri = "shm://reverb-cli-hostile-" + ProcessHandle.current().pid() + "-" +
            SERVERS.incrementAndGet();
        server = ReflectionService.addTo(RpcServer.builder(uri).addService(new ShopFixture().nativeShop())).build()
            .start();

        final Run call = ReverbCliTest.run("call", uri, "reverb.bench.clitest.Shop/ListItems", "-d",
            "{\"count\": 50, \"prefix\": \"p\"}", "--max-responses", "10");

        assertThat(call.code).isEqualTo(CliException.CALL_FAILED);
        assertThat(call.err).contains("more than 10 responses (--max-responses)");
        final List<String> names = new ArrayList<>();
        JSON.readerFor(JsonNode.class).<JsonNode>readValues(call.out)
            .forEachRemaining(node -> names.add(node.get("name").asText()));
        assertThat(names).hasSize(10).startsWith("p0").endsWith("p9");

        final Run zero = ReverbCliTest.run("call", uri, "reverb.bench.clitest.Shop/ListItems", "--max-responses", "0");
        assertThat(zero.code).isEqualTo(CliException.USAGE);
        assertThat(zero.err).contains("--max-responses must be at least 1");
    }

    @Test
    void shouldKeepAForgedFileNameOnTheLineOfItsError()
    {
        final String uri = serve(new HostileReflection(HostileReflection.Mode.FORGED_IMPORT, 0));

        final Run describe = ReverbCliTest.run("describe", uri, "evil.Svc");

        assertThat(describe.code).as(describe.err).isEqualTo(CliException.CALL_FAILED);
        assertThat(describe.err.lines()).containsExactly("ERROR: NOT_FOUND: no descriptor of file " +
            "b.proto\\u000areverb-cli: OK, 0 errors");
    }

    @Test
    void shouldRefuseAJsonNameThatWouldForgeOutput()
    {
        final String uri = serve(new HostileReflection(HostileReflection.Mode.FORGED_JSON_NAME, 0));

        final Run call = ReverbCliTest.run("call", uri, "evil.Svc/Get", "-d", "{}");

        assertThat(call.code).as(call.err).isEqualTo(CliException.CALL_FAILED);
        assertThat(call.out).isEmpty();
        assertThat(call.err.lines()).singleElement().asString()
            .startsWith("ERROR: invalid descriptor of evil.proto from the reflection service at " + uri + ": field " +
                "text has json_name \"x\":1}\\u000areverb-cli: OK, 0 errors\\u000a{\"y\", not letters, digits and '_'");
    }

    @Test
    void shouldKeepAForgedAnyTypeUrlOnTheLineOfItsError()
    {
        final String uri = serveShop();

        final Run call = ReverbCliTest.run("call", uri, "reverb.bench.clitest.Shop/GetItem", "-d", "{\"name\": \"forged\"}");

        assertThat(call.code).as(call.err).isEqualTo(CliException.CALL_FAILED);
        assertThat(call.out).isEmpty();
        assertThat(call.err.lines()).singleElement().asString()
            .startsWith("ERROR: a response does not print as JSON: ")
            .contains("type.googleapis.com/x\\u000areverb-cli: OK, 0 errors");
    }

    @Test
    void shouldExitOneWhenAConnectedServerAnswersUnavailable()
    {
        final String uri = serveShop();

        final Run call = ReverbCliTest.run("call", uri, "reverb.bench.clitest.Shop/GetItem", "-d",
            "{\"name\": \"unavailable\"}");

        assertThat(call.code).as(call.err).isEqualTo(CliException.CALL_FAILED);
        assertThat(call.err.trim()).isEqualTo("ERROR: UNAVAILABLE: overloaded");
    }

    /** @return a Shop that answers "forged" with an Any of a forged type URL and "unavailable" with UNAVAILABLE. */
    private String serveShop()
    {
        final String uri = "shm://reverb-cli-hostile-" + ProcessHandle.current().pid() + "-" +
            SERVERS.incrementAndGet();
        server = ReflectionService.addTo(RpcServer.builder(uri).addService(new ShopRpc.ShopImplBase()
        {
            @Override
            public Mono<Item> getItem(final ItemRequest request)
            {
                if ("unavailable".equals(request.getName()))
                {
                    return Mono.error(Status.UNAVAILABLE.withDescription("overloaded").asException());
                }
                return Mono.just(Item.newBuilder().setName(request.getName()).setExtra(Any.newBuilder()
                    .setTypeUrl("type.googleapis.com/x\nreverb-cli: OK, 0 errors")).build());
            }
        })).build().start();
        return uri;
    }
}
