package io.reverb.bench;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * An echo server in its own JVM, as in a real deployment: the same java, the same class path,
 * the add-exports flag Agrona needs. The child announces its address on stdout, and exits when
 * its stdin reaches end of file, so it never outlives the benchmark that started it.
 */
public final class ServerProcess implements AutoCloseable
{
    /** The line prefix a server prints once it accepts calls; the address follows. */
    public static final String READY = "REVERB-BENCH-SERVER-READY ";
    /** A line the parent writes to the server's stdin to ask for {@link #resourceUsage}. */
    public static final String USAGE_REQUEST = "usage";
    /** The line prefix of the server's answer to {@link #USAGE_REQUEST}. */
    public static final String USAGE = "REVERB-BENCH-SERVER-USAGE ";
    /** JVM flag every Reverb process needs (Agrona 2.x). */
    public static final String ADD_EXPORTS = "--add-exports=java.base/jdk.internal.misc=ALL-UNNAMED";

    /** DiSNi (rdma://) reads direct-buffer addresses through sun.nio.ch.DirectBuffer. */
    public static final String ADD_EXPORTS_DISNI = "--add-exports=java.base/sun.nio.ch=ALL-UNNAMED";

    private final Process process;
    private final OutputStream stdin;
    private final String uri;
    private final BlockingQueue<String> usageAnswers;

    private ServerProcess(final Process process, final String uri, final BlockingQueue<String> usageAnswers)
    {
        this.process = process;
        this.stdin = process.getOutputStream();
        this.uri = uri;
        this.usageAnswers = usageAnswers;
    }

    /**
     * Asks the server for its transport's resource usage (registered buffers and bytes held).
     *
     * @param timeout how long to wait for the answer.
     * @return the server's answer, e.g. {@code buffers=0, bytes=0}.
     * @throws IOException if the server does not answer in time.
     */
    public String resourceUsage(final Duration timeout) throws IOException
    {
        usageAnswers.clear();
        stdin.write((USAGE_REQUEST + "\n").getBytes(StandardCharsets.UTF_8));
        stdin.flush();
        try
        {
            final String answer = usageAnswers.poll(timeout.toNanos(), TimeUnit.NANOSECONDS);
            if (answer == null)
            {
                throw new IOException("server process " + process.pid() + " did not report its resource usage within " +
                    timeout.toMillis() + " ms");
            }
            return answer;
        }
        catch (final InterruptedException ex)
        {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while waiting for the server's resource usage");
        }
    }

    /**
     * Starts a server process and waits until it is ready.
     *
     * @param uri     where it listens.
     * @param polling polling mode or null.
     * @param jvmArgs extra JVM arguments.
     * @param timeout how long to wait for it to come up.
     * @return the running server.
     * @throws IOException if it cannot be started or does not come up.
     */
    public static ServerProcess start(
        final String uri, final String polling, final List<String> jvmArgs, final Duration timeout) throws IOException
    {
        final List<String> command = new ArrayList<>();
        command.add(System.getProperty("java.home") + "/bin/java");
        command.add(ADD_EXPORTS);
        command.add(ADD_EXPORTS_DISNI);
        command.addAll(inheritedJvmArgs());
        command.addAll(jvmArgs);
        command.add("-cp");
        command.add(System.getProperty("java.class.path"));
        command.add(ReverbBench.class.getName());
        command.add("server");
        command.add("--uri");
        command.add(uri);
        if (polling != null)
        {
            command.add("--polling");
            command.add(polling);
        }
        command.add("--exit-on-stdin-eof");
        final Process process = new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.INHERIT).start();
        final BufferedReader out = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
        final String[] ready = new String[1];
        final BlockingQueue<String> usageAnswers = new LinkedBlockingQueue<>();
        final Thread reader = new Thread(() ->
        {
            try
            {
                String line;
                while ((line = out.readLine()) != null)
                {
                    if (line.startsWith(READY))
                    {
                        synchronized (ready)
                        {
                            ready[0] = line.substring(READY.length()).trim();
                            ready.notifyAll();
                        }
                    }
                    else if (line.startsWith(USAGE))
                    {
                        usageAnswers.add(line.substring(USAGE.length()).trim());
                    }
                    else
                    {
                        System.err.println("[server] " + line);
                    }
                }
            }
            catch (final IOException ignore)
            {
                // The process ended; its exit is reported by the waiter below.
            }
        }, "reverb-bench-server-output");
        reader.setDaemon(true);
        reader.start();

        final long deadline = System.nanoTime() + timeout.toNanos();
        synchronized (ready)
        {
            while (ready[0] == null && process.isAlive() && System.nanoTime() < deadline)
            {
                try
                {
                    ready.wait(50);
                }
                catch (final InterruptedException ex)
                {
                    process.destroyForcibly();
                    Thread.currentThread().interrupt();
                    throw new IOException("interrupted while starting the server process");
                }
            }
        }
        if (ready[0] == null)
        {
            final boolean alive = process.isAlive();
            process.destroyForcibly();
            throw new IOException(alive ?
                "server process did not come up within " + timeout.toSeconds() + " s: " + String.join(" ", command) :
                "server process exited with status " + process.exitValue() + " (its error is above): " + uri);
        }
        return new ServerProcess(process, ready[0], usageAnswers);
    }

    /**
     * Heap, GC and -XX settings of this JVM, so that client and server run with the same settings.
     *
     * @return the arguments to pass on.
     */
    static List<String> inheritedJvmArgs()
    {
        final List<String> inherited = new ArrayList<>();
        for (final String arg : ManagementFactory.getRuntimeMXBean().getInputArguments())
        {
            if (arg.startsWith("-Xm") || arg.startsWith("-Xss") ||
                (arg.startsWith("-XX:") && !arg.contains("HeapDump") && !arg.contains("ErrorFile")))
            {
                inherited.add(arg);
            }
        }
        return inherited;
    }

    /**
     * @return the address the server announced.
     */
    public String uri()
    {
        return uri;
    }

    /**
     * @return the child's process id.
     */
    public long pid()
    {
        return process.pid();
    }

    /**
     * @return CPU time (user + system) the child has used so far, in nanoseconds, or -1 if unknown.
     */
    public long cpuNanos()
    {
        return process.toHandle().info().totalCpuDuration().map(Duration::toNanos).orElse(-1L);
    }

    /**
     * Closes the child's stdin (it exits on EOF), then kills it if it lingers.
     */
    @Override
    public void close()
    {
        try
        {
            stdin.close();
        }
        catch (final IOException ignore)
        {
            // Already gone.
        }
        try
        {
            if (!process.waitFor(10, TimeUnit.SECONDS))
            {
                process.destroyForcibly().waitFor(5, TimeUnit.SECONDS);
            }
        }
        catch (final InterruptedException ex)
        {
            process.destroyForcibly();
            Thread.currentThread().interrupt();
        }
    }
}
