package io.reverb.rdma.rpc;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * {@code reverb://} between two network namespaces joined by a veth pair: a server process in one, the same client
 * code ({@link ReverbFabricProbe}) in the other, once as a process that shares the host's {@code /dev/shm} and once as
 * one with a {@code /dev/shm} of its own, as a container has.
 *
 * <p>Network namespaces alone do not make two hosts: the processes share the kernel (boot id), the file system and so
 * the shm directory, and the shm fabric's Unix socket is a path, reachable from any network namespace; shm is the
 * right choice there, and is chosen. With a {@code /dev/shm} of its own the client's shm directory is another
 * device, and it stays on tcp, saying so.
 *
 * <p>Needs root and {@code ip netns} (as CI has); elsewhere skipped with the cause printed. Namespaces are named
 * {@code fabric-<pid>-a/b} and deleted after.
 */
class ReverbNamespacesTest
{
    private static final long WAIT_SECONDS = 60;
    private static final String PREFIX = "fabric-" + ProcessHandle.current().pid();
    private static final String SERVER_NS = PREFIX + "-a";
    private static final String CLIENT_NS = PREFIX + "-b";
    private static final String SERVER_IP = "10.213.7.1";
    private static final String CLIENT_IP = "10.213.7.2";
    /** The shm directory of every probe (the server creates it; a client with its own /dev/shm makes its own). */
    private static final String SHM_DIR = "/dev/shm/" + PREFIX + "-probe";
    private static boolean created;

    @BeforeAll
    static void createNamespaces() throws Exception
    {
        final String cause = run("ip", "netns", "add", SERVER_NS);
        if (cause != null)
        {
            System.err.println("ReverbNamespacesTest skipped: cannot create a network namespace: " + cause);
            Assumptions.abort("cannot create a network namespace (needs root and ip netns): " + cause);
        }
        created = true;
        final String veth = "fv" + (ProcessHandle.current().pid() % 1_000_000);
        for (final String[] command : new String[][] {
            {"ip", "netns", "add", CLIENT_NS},
            {"ip", "link", "add", veth + "a", "type", "veth", "peer", "name", veth + "b"},
            {"ip", "link", "set", veth + "a", "netns", SERVER_NS},
            {"ip", "link", "set", veth + "b", "netns", CLIENT_NS},
            {"ip", "-n", SERVER_NS, "addr", "add", SERVER_IP + "/24", "dev", veth + "a"},
            {"ip", "-n", CLIENT_NS, "addr", "add", CLIENT_IP + "/24", "dev", veth + "b"},
            {"ip", "-n", SERVER_NS, "link", "set", veth + "a", "up"},
            {"ip", "-n", CLIENT_NS, "link", "set", veth + "b", "up"},
            {"ip", "-n", SERVER_NS, "link", "set", "lo", "up"},
            {"ip", "-n", CLIENT_NS, "link", "set", "lo", "up"}})
        {
            final String failure = run(command);
            assertThat(failure).as(String.join(" ", command)).isNull();
        }
    }

    @AfterAll
    static void deleteNamespaces() throws Exception
    {
        if (created)
        {
            run("ip", "netns", "delete", CLIENT_NS); // takes the veth pair with it
            run("ip", "netns", "delete", SERVER_NS);
            run("rm", "-rf", SHM_DIR);
        }
    }

    @Test
    void shouldChooseShmAcrossNetworkNamespacesOfOneHostAndTcpForAClientWithADevShmOfItsOwn() throws Exception
    {
        final Process server = new ProcessBuilder(javaCommand("ip", "netns", "exec", SERVER_NS, "server", SERVER_IP))
            .redirectError(ProcessBuilder.Redirect.INHERIT).start();
        try
        {
            final BufferedReader serverOut = new BufferedReader(new InputStreamReader(server.getInputStream(),
                StandardCharsets.UTF_8));
            final String ready = serverOut.readLine();
            assertThat(ready).as("the server's first line").startsWith("READY ");
            final String uri = "reverb://" + SERVER_IP + ":" + ready.substring("READY ".length());

            // the client process shares the host's /dev/shm (and so the server's shm directory)
            final List<String> sameHost = client(javaCommand("ip", "netns", "exec", CLIENT_NS, "client", uri));
            assertThat(sameHost).contains("ECHO probe", "FABRIC shm");

            // the same client code with a /dev/shm of its own (as in a container): tcp, and the reason in its log
            final List<String> own = new ArrayList<>(List.of("ip", "netns", "exec", CLIENT_NS, "sh", "-c",
                "mount -t tmpfs -o mode=1777 " + PREFIX + "-shm /dev/shm && mkdir -m 700 " + SHM_DIR +
                    " && exec \"$0\" \"$@\""));
            own.addAll(javaCommand("client", uri));
            final List<String> container = client(own);
            assertThat(container).contains("ECHO probe", "FABRIC tcp");
            assertThat(String.join("\n", container)).contains("stays on tcp").contains("is not this side's");
        }
        finally
        {
            server.getOutputStream().close();
            if (!server.waitFor(WAIT_SECONDS, TimeUnit.SECONDS))
            {
                server.destroyForcibly();
            }
        }
    }

    /** @return the command with the probe's JVM after the given prefix words (the prefix's own, then the probe's). */
    private static List<String> javaCommand(final String... words)
    {
        final List<String> command = new ArrayList<>();
        int i = 0;
        while (i < words.length && !"server".equals(words[i]) && !"client".equals(words[i]))
        {
            command.add(words[i++]);
        }
        command.addAll(List.of(System.getProperty("java.home") + "/bin/java", "-Xmx256m",
            "--add-exports=java.base/jdk.internal.misc=ALL-UNNAMED", "-Dreverb.shm.dir=" + SHM_DIR,
            "-cp", System.getProperty("java.class.path"),
            ReverbFabricProbe.class.getName()));
        while (i < words.length)
        {
            command.add(words[i++]);
        }
        return command;
    }

    /** Runs a client to its end; returns its output (stdout and stderr) as lines. */
    private static List<String> client(final List<String> command) throws Exception
    {
        final ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true);
        builder.environment().remove("JAVA_TOOL_OPTIONS");
        final Process process = builder.start();
        final List<String> lines = new ArrayList<>();
        try (BufferedReader out = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8)))
        {
            for (String line = out.readLine(); line != null; line = out.readLine())
            {
                lines.add(line);
            }
        }
        assertThat(process.waitFor(WAIT_SECONDS, TimeUnit.SECONDS)).as("client ended").isTrue();
        assertThat(process.exitValue()).as("client exit status; its output: %s", lines).isZero();
        return lines;
    }

    /** @return null if the command succeeded, else what it printed (or why it could not run). */
    private static String run(final String... command) throws InterruptedException
    {
        try
        {
            final Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
            final String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
            return process.waitFor() == 0 ? null : String.join(" ", command) + ": " + output;
        }
        catch (final IOException ex)
        {
            return String.join(" ", command) + ": " + ex.getMessage();
        }
    }
}
