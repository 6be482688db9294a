package io.reverb.bench.stat;

import static org.assertj.core.api.Assertions.assertThat;

import io.reverb.bench.clitest.Item;
import io.reverb.bench.clitest.ItemRequest;
import io.reverb.bench.clitest.ListRequest;
import io.reverb.bench.clitest.ShopRpc;
import io.reverb.common.counters.ProcessCounters;
import io.reverb.rpc.RpcChannel;
import io.reverb.rpc.RpcException;
import io.reverb.rpc.RpcServer;
import io.reverb.rpc.Status;
import io.reverb.rpc.StatusCode;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;

/**
 * reverb-stat reads this process's live counters (a Reverb server and channel over {@code shm://}) while calls run,
 * in this process ({@link ReverbStat#run}) and from a separate JVM (the tool's main class, as bin/reverb-stat runs
 * it), and the numbers are the calls this test made: started, finished by status, in flight.
 */
class ReverbStatTest
{
    private static final Duration TIMEOUT = Duration.ofSeconds(30);
    private static final int OK_CALLS = 40;
    private static final int FAILED_CALLS = 3;
    private static final int HANGING_CALLS = 5;

    @Test
    void shouldPrintTheCallsOfALiveProcessInThisJvmAndFromAnother() throws Exception
    {
        final String uri = "shm://reverb-stat-" + ProcessHandle.current().pid();
        final Sinks.Empty<Void> release = Sinks.empty();
        final RpcServer server = RpcServer.builder(uri).addService(new ShopRpc.ShopImplBase()
        {
            @Override
            public Mono<Item> getItem(final ItemRequest request)
            {
                return "missing".equals(request.getName()) ?
                    Mono.error(Status.NOT_FOUND.withDescription("no such item").asException()) :
                    Mono.just(Item.newBuilder().setName(request.getName()).build());
            }

            @Override
            public Flux<Item> listItems(final ListRequest request)
            {
                // runs until the test releases it: a call in flight while the tool reads
                return Flux.just(Item.newBuilder().setName("first").build()).concatWith(release.asMono().then(Mono.empty()));
            }
        }).build().start();
        final RpcChannel channel = RpcChannel.builder(uri).build();
        final List<Disposable> hanging = new ArrayList<>();
        try
        {
            final ShopRpc.ShopReactorStub stub = ShopRpc.newReactorStub(channel);
            for (int i = 0; i < OK_CALLS; i++)
            {
                assertThat(stub.getItem(ItemRequest.newBuilder().setName("item" + i).build()).block(TIMEOUT).getName())
                    .isEqualTo("item" + i);
            }
            for (int i = 0; i < FAILED_CALLS; i++)
            {
                final StatusCode code = stub.getItem(ItemRequest.newBuilder().setName("missing").build())
                    .map(item -> StatusCode.OK)
                    .onErrorResume(RpcException.class, e -> Mono.just(e.status().code()))
                    .block(TIMEOUT);
                assertThat(code).isEqualTo(StatusCode.NOT_FOUND);
            }
            // each hanging call has delivered its first item: the server has started it, and it has not ended
            for (int i = 0; i < HANGING_CALLS; i++)
            {
                final Sinks.One<Item> first = Sinks.one();
                hanging.add(stub.listItems(ListRequest.newBuilder().setCount(1).build())
                    .subscribe(first::tryEmitValue));
                assertThat(first.asMono().block(TIMEOUT).getName()).isEqualTo("first");
            }

            final long pid = ProcessHandle.current().pid();
            final Path dir = ProcessCounters.current().file().getParent();

            // in this JVM, filtered by method: exact counts per method and status
            final Run inProcess = Run.here("--dir", dir.toString(), "--pid", Long.toString(pid), "--method", uri);
            assertThat(inProcess.code).as(inProcess.err).isZero();
            assertThat(inProcess.value(uri + " reverb.bench.clitest.Shop/GetItem", "calls started"))
                .isEqualTo(OK_CALLS + FAILED_CALLS);
            assertThat(inProcess.value(uri + " reverb.bench.clitest.Shop/GetItem", "calls finished OK")).isEqualTo(OK_CALLS);
            assertThat(inProcess.value(uri + " reverb.bench.clitest.Shop/GetItem", "calls finished NOT_FOUND"))
                .isEqualTo(FAILED_CALLS);
            assertThat(inProcess.value(uri + " reverb.bench.clitest.Shop/ListItems", "calls started"))
                .isEqualTo(HANGING_CALLS);
            assertThat(inProcess.value(uri + " reverb.bench.clitest.Shop/ListItems", "calls finished OK")).isZero();
            assertThat(inProcess.out).doesNotContain("connection ");

            // the server's connection: every request arrived as an eager message
            final Run connections = Run.here("--dir", dir.toString(), "--pid", Long.toString(pid), "--connection",
                "(accepted)");
            assertThat(connections.code).as(connections.err).isZero();
            assertThat(connections.out).contains("connection ").doesNotContain("method ");

            // from another JVM, as bin/reverb-stat runs it: the same numbers, read from the file
            final Run child = Run.child("--dir", dir.toString(), "--pid", Long.toString(pid), "--method", uri);
            assertThat(child.code).as(child.err).isZero();
            assertThat(child.value(uri + " reverb.bench.clitest.Shop/GetItem", "calls started"))
                .isEqualTo(OK_CALLS + FAILED_CALLS);
            assertThat(child.value(uri + " reverb.bench.clitest.Shop/GetItem", "calls finished NOT_FOUND"))
                .isEqualTo(FAILED_CALLS);
            assertThat(child.value(uri + " reverb.bench.clitest.Shop/ListItems", "calls started")).isEqualTo(HANGING_CALLS);

            // the hanging calls end: all finished OK
            release.tryEmitEmpty();
            // each call ends on the server after the test's signal: wait for the counters to say so (bounded)
            final long deadline = System.nanoTime() + TIMEOUT.toNanos();
            Run after;
            do
            {
                after = Run.here("--dir", dir.toString(), "--pid", Long.toString(pid), "--method", uri + " reverb.bench");
            }
            while (after.value(uri + " reverb.bench.clitest.Shop/ListItems", "calls finished OK") < HANGING_CALLS &&
                System.nanoTime() < deadline && sleep());
            assertThat(after.value(uri + " reverb.bench.clitest.Shop/ListItems", "calls finished OK"))
                .isEqualTo(HANGING_CALLS);
        }
        finally
        {
            hanging.forEach(Disposable::dispose);
            channel.close();
            server.shutdown();
            assertThat(server.awaitTermination(TIMEOUT)).isTrue();
        }
    }

    @Test
    void shouldExitWithCodesScriptsCanUse()
    {
        final Run nobody = Run.here("--pid", "0");
        assertThat(nobody.code).isEqualTo(ReverbStat.NOTHING);
        assertThat(nobody.err).contains("no live Reverb process matching the filters");

        final Run usage = Run.here("--no-such-flag");
        assertThat(usage.code).isEqualTo(ReverbStat.USAGE);
        assertThat(usage.err).contains("reverb-stat --help");

        final Run help = Run.here("--help");
        assertThat(help.code).isZero();
        assertThat(help.out).contains("--watch", "--pid", "--connection", "--method", "Exit codes");
    }

    private static boolean sleep()
    {
        try
        {
            Thread.sleep(10);
            return true;
        }
        catch (final InterruptedException ex)
        {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    /** One run of the tool and what it printed. */
    private static final class Run
    {
        private static final Pattern VALUE = Pattern.compile("^\\s{4}(.+?)\\s+([0-9,]+)(\\s.*)?$");

        final int code;
        final String out;
        final String err;

        private Run(final int code, final String out, final String err)
        {
            this.code = code;
            this.out = out;
            this.err = err;
        }

        static Run here(final String... args)
        {
            final StringWriter out = new StringWriter();
            final StringWriter err = new StringWriter();
            final int code = ReverbStat.run(args, new PrintWriter(out), new PrintWriter(err));
            return new Run(code, out.toString(), err.toString());
        }

        static Run child(final String... args) throws IOException, InterruptedException
        {
            final List<String> command = new ArrayList<>(List.of(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "--add-exports=java.base/jdk.internal.misc=ALL-UNNAMED", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC",
                "-cp", System.getProperty("java.class.path"), ReverbStat.class.getName()));
            command.addAll(List.of(args));
            final Path outFile = Files.createTempFile("reverb-stat-out", ".txt");
            final Path errFile = Files.createTempFile("reverb-stat-err", ".txt");
            try
            {
                final Process process = new ProcessBuilder(command).redirectOutput(outFile.toFile())
                    .redirectError(errFile.toFile()).start();
                if (!process.waitFor(TIMEOUT.toSeconds(), TimeUnit.SECONDS))
                {
                    process.destroyForcibly();
                    throw new AssertionError("reverb-stat did not end within " + TIMEOUT);
                }
                return new Run(process.exitValue(), Files.readString(outFile, StandardCharsets.UTF_8),
                    Files.readString(errFile, StandardCharsets.UTF_8));
            }
            finally
            {
                Files.deleteIfExists(outFile);
                Files.deleteIfExists(errFile);
            }
        }

        /** The value of counter {@code name} in the group whose label ends with {@code group}; -1 if absent. */
        long value(final String group, final String name)
        {
            boolean inGroup = false;
            for (final String line : out.split("\n"))
            {
                if (line.startsWith("  ") && !line.startsWith("    "))
                {
                    inGroup = line.endsWith(group);
                    continue;
                }
                final Matcher m = VALUE.matcher(line);
                if (inGroup && m.matches() && m.group(1).trim().equals(name))
                {
                    return Long.parseLong(m.group(2).replace(",", ""));
                }
            }
            return -1;
        }
    }
}
