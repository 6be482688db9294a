package io.reverb.spring.boot;

import java.io.IOException;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * {@link EchoServerApplication} in a child JVM, with the test's class path; its stdout lines are read by a thread and
 * handed over through a queue, so that the test blocks on the line it waits for (no polling, no sleeps).
 */
final class ServerProcess implements AutoCloseable
{
    private static final int MAX_ECHOED_LINES = 200;

    private final Process process;
    private final BlockingQueue<String> lines = new LinkedBlockingQueue<>();
    private final Writer stdin;

    ServerProcess(final String... springArgs) throws Exception
    {
        final String classPath = System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
        final List<String> command = new ArrayList<>(List.of(System.getProperty("java.home") + "/bin/java",
            "--add-exports", "java.base/jdk.internal.misc=ALL-UNNAMED", "-Xmx256m", "-XX:TieredStopAtLevel=1",
            "-XX:+UseSerialGC", "-cp", classPath, EchoServerApplication.class.getName(),
            "--spring.main.banner-mode=off", "--logging.level.root=WARN", "--logging.level.io.reverb.spring=INFO",
            // Spring gRPC's server auto-configuration is on the test class path (ReverbBesideSpringGrpcServerTest):
            // here the Reverb server is to serve the grpc-java service
            "--spring.grpc.server.enabled=false"));
        command.addAll(List.of(springArgs));
        process = new ProcessBuilder(command).redirectErrorStream(true).start();
        stdin = new OutputStreamWriter(process.getOutputStream(), StandardCharsets.UTF_8);
        final BufferedReader out = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
        final Thread reader = new Thread(() ->
        {
            int echoed = 0;
            try
            {
                String line;
                while ((line = out.readLine()) != null)
                {
                    if (echoed++ < MAX_ECHOED_LINES)
                    {
                        System.out.println("[server] " + line);
                    }
                    lines.add(line);
                }
            }
            catch (final IOException e)
            {
                lines.add("EOF " + e);
            }
            lines.add("EOF");
        }, "server-process-stdout");
        reader.setDaemon(true);
        reader.start();
    }

    /**
     * @param prefix  what the line starts with.
     * @param timeout how long to wait for it.
     * @return the rest of the line.
     * @throws AssertionError if the process ends or the time runs out first.
     */
    String awaitLine(final String prefix, final Duration timeout) throws InterruptedException
    {
        final long deadline = System.nanoTime() + timeout.toNanos();
        while (true)
        {
            final String line = lines.poll(deadline - System.nanoTime(), TimeUnit.NANOSECONDS);
            if (line == null)
            {
                throw new AssertionError("no line '" + prefix + "' from the server process within " + timeout);
            }
            if (line.startsWith(prefix))
            {
                return line.substring(prefix.length()).trim();
            }
            if (line.startsWith("EOF"))
            {
                throw new AssertionError("the server process ended before printing '" + prefix + "'");
            }
        }
    }

    void writeLine(final String line) throws IOException
    {
        stdin.write(line + "\n");
        stdin.flush();
    }

    /**
     * SIGTERM: the JVM's shutdown hook closes the Spring context, as in a container being stopped. Through the process
     * handle, since {@link Process#destroy()} also closes the pipes, and the test still reads and writes them.
     */
    void terminate()
    {
        process.toHandle().destroy();
    }

    /**
     * @param timeout how long to wait.
     * @return the exit code.
     * @throws AssertionError if it has not exited by then.
     */
    int awaitExit(final Duration timeout) throws InterruptedException
    {
        if (!process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS))
        {
            throw new AssertionError("the server process did not exit within " + timeout);
        }
        return process.exitValue();
    }

    @Override
    public void close() throws InterruptedException
    {
        if (process.isAlive())
        {
            process.destroyForcibly();
            process.waitFor(30, TimeUnit.SECONDS);
        }
    }
}
