package io.reverb.rdma.provider.disni;

import io.reverb.rdma.provider.disni.nativelib.NativeLibrary;
import io.reverb.rdma.verbs.TestScale;
import io.reverb.rdma.verbs.VerbsConfig;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Instant;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * {@code bin/reverb-rdma-check}: one command that tells a user whether {@code rdma://} can run on this host,
 * and if it can, exercises it and writes one report file to attach to a bug.
 *
 * <ol>
 *   <li>Facts, from sysfs and {@code /proc} only (no native code): RDMA devices with transport, ports, state,
 *       link layer, GIDs and network interfaces; the rdma_cm device node; the locked-memory limit
 *       ({@code ulimit -l}); a libdisni on {@code java.library.path} and the native half bundled in this jar;
 *       the {@code sun.nio.ch} export.</li>
 *   <li>The verdict of {@link DisniAvailability} (which loads libdisni only when every file-level check
 *       passed). If {@code rdma://} cannot run, the check prints one line, {@code reverb-rdma-check: NOT READY:
 *       <reason>}, writes the report and exits with {@value #EXIT_NOT_READY}.</li>
 *   <li>Otherwise it runs, from the source checkout, each as a child process with a time limit: the verbs
 *       conformance suite over {@code rdma://} ({@code DisniConformanceTest}, loopback through the NIC, via
 *       Maven); the engine ping-pong ({@code io.reverb.bench.pingpong.EnginePingPong}, benchmarks module) over
 *       {@code rdma://} and {@code tcp://} on the RDMA interface's address; and {@code reverb-bench} over
 *       {@code rdma://}, {@code tcp://} and grpc-java side by side. With {@code --peer host}, the ping-pong and
 *       bench clients target servers the user started on that host (see RDMA-HARDWARE.md); the conformance
 *       suite is loopback only.</li>
 * </ol>
 *
 * <p>Exit status: {@value #EXIT_OK} every step passed, {@value #EXIT_FAILED} a step failed,
 * {@value #EXIT_NOT_READY} {@code rdma://} cannot run here, {@value #EXIT_USAGE} bad arguments.
 *
 * <p><b>The hardware path (step 3) has never been run</b>: no machine used to develop Reverb has an RDMA
 * device. Only the NOT READY path is tested (see {@code RdmaHostCheckTest}).
 */
public final class RdmaHostCheck
{
    /** Every step passed. */
    public static final int EXIT_OK = 0;
    /** A step failed (details in the report). */
    public static final int EXIT_FAILED = 1;
    /** rdma:// cannot run on this host (the reason is printed on one line). */
    public static final int EXIT_NOT_READY = 2;
    /** Bad arguments. */
    public static final int EXIT_USAGE = 64;

    /** System property: the repository root (set by {@code bin/reverb-rdma-check}). */
    public static final String ROOT_PROP = "reverb.check.root";

    private static final String USAGE = String.join("\n",
        "usage: reverb-rdma-check [--peer HOST] [--report FILE] [--duration 10s] [--facts-only] [--no-bench]",
        "  Reports this host's RDMA devices, ports, link layer, GIDs, memlock limit and libdisni; if rdma:// can",
        "  run, runs the verbs conformance suite over rdma://, the engine ping-pong and reverb-bench (rdma:// vs",
        "  tcp:// vs grpc-java), and writes everything to one report file (default reverb-rdma-check-report.txt).",
        "  --peer HOST   run the ping-pong/bench clients against servers already started on HOST (RDMA-HARDWARE.md)",
        "  --facts-only  stop after the facts and the verdict",
        "  --no-bench    the conformance suite and the ping-pongs only, no reverb-bench (bin/reverb-rdma-vm runs it",
        "                between two VMs itself)",
        "  exit: 0 all passed, 1 a step failed, 2 rdma:// cannot run here (reason on one line), 64 bad arguments");

    private static final int TAIL_LINES = 200;

    /**
     * What the check looks at; {@link #system()} in production, a fake sysfs tree, limits file and (over the
     * emulated device) an in-process {@link HardwarePath} in tests.
     *
     * @param sysfsInfiniband  {@code /sys/class/infiniband}; network interfaces are read next to it ({@code ../net}).
     * @param rdmaCmDevice     {@code /dev/infiniband/rdma_cm}.
     * @param libraryPath      {@code java.library.path}.
     * @param sunNioChExported whether DiSNi can read direct-buffer addresses.
     * @param nativeProbe      loads libdisni and opens rdma_cm.
     * @param procLimits       {@code /proc/self/limits} (the memlock limit).
     * @param interfaces       addresses of network interfaces.
     * @param repositoryRoot   the Reverb checkout or bundle ({@code bin/reverb-rdma-check} sets it), or null.
     * @param hardware         how the hardware path runs; null: child processes from the shipped jars.
     */
    record Host(
        Path sysfsInfiniband,
        Path rdmaCmDevice,
        String libraryPath,
        boolean sunNioChExported,
        DisniAvailability.NativeProbe nativeProbe,
        Path procLimits,
        RdmaDevices.InterfaceAddresses interfaces,
        Path repositoryRoot,
        HardwarePath hardware)
    {
        Host(
            final Path sysfsInfiniband,
            final Path rdmaCmDevice,
            final String libraryPath,
            final boolean sunNioChExported,
            final DisniAvailability.NativeProbe nativeProbe,
            final Path procLimits,
            final RdmaDevices.InterfaceAddresses interfaces,
            final Path repositoryRoot)
        {
            this(sysfsInfiniband, rdmaCmDevice, libraryPath, sunNioChExported, nativeProbe, procLimits, interfaces,
                repositoryRoot, null);
        }

        /** @return {@code /sys/class/net} next to the sysfs RDMA class. */
        Path sysfsNet()
        {
            return sysfsInfiniband.resolveSibling("net");
        }

        /** @return this machine. */
        static Host system()
        {
            final String root = System.getProperty(ROOT_PROP);
            return new Host(
                DisniAvailability.SYSFS_INFINIBAND,
                DisniAvailability.RDMA_CM_DEVICE,
                System.getProperty("java.library.path", ""),
                DisniAvailability.sunNioChExportedToDisni(),
                DisniAvailability::loadDisniAndOpenRdmaCm,
                Paths.get("/proc/self/limits"),
                RdmaDevices.SYSTEM_INTERFACES,
                root == null || root.isBlank() ? null : Paths.get(root),
                null);
        }
    }

    /** The hardware path: the conformance suite and the latency measurements, over the device found. */
    interface HardwarePath
    {
        /**
         * @param address the local RDMA interface address.
         * @return the conformance suite's outcome (passed only if every test ran and passed).
         */
        StepResult conformance(String address);

        /**
         * @param scheme  "rdma" or "tcp".
         * @param address the address to measure on.
         * @return p50/p99 of 64-byte round trips in the modes of {@link LatencyTable#MODES}, with what was run.
         */
        LatencyRun latency(String scheme, String address);
    }

    /**
     * @param cells   what was measured.
     * @param outcome the run, as a step (its command and output go into the report).
     */
    record LatencyRun(List<LatencyTable.Cell> cells, StepResult outcome)
    {
    }

    /** Parsed command line. */
    record Options(String peer, Path report, String duration, boolean factsOnly, boolean bench)
    {
    }

    private RdmaHostCheck()
    {
    }

    /**
     * @param args see {@link #USAGE}.
     */
    public static void main(final String[] args)
    {
        System.exit(run(args, Host.system(), System.out, System.err));
    }

    /**
     * The whole check.
     *
     * @param args command line.
     * @param host what to look at.
     * @param out  progress and results.
     * @param err  the one-line verdict when not ready, usage errors.
     * @return the exit status.
     */
    static int run(final String[] args, final Host host, final PrintStream out, final PrintStream err)
    {
        final Options options;
        try
        {
            options = parse(args);
        }
        catch (final IllegalArgumentException ex)
        {
            err.println("reverb-rdma-check: " + ex.getMessage());
            err.println(USAGE);
            return EXIT_USAGE;
        }
        if (options == null)
        {
            out.println(USAGE);
            return EXIT_OK;
        }

        final StringBuilder report = new StringBuilder();
        report.append("# reverb-rdma-check report\n");
        report.append("date: ").append(Instant.now()).append('\n');
        report.append("host: ").append(hostName()).append(", ").append(System.getProperty("os.name")).append(' ')
            .append(System.getProperty("os.version")).append(' ').append(System.getProperty("os.arch"))
            .append(", ").append(Runtime.getRuntime().availableProcessors()).append(" cores, Java ")
            .append(System.getProperty("java.vm.version")).append('\n');
        final List<RdmaDevices.Device> devices = RdmaDevices.scan(host.sysfsInfiniband());
        appendFacts(report, host, devices);

        final String cause = verdict(host, devices);
        if (cause != null)
        {
            final String reason = oneLine(cause.startsWith(DisniAvailability.CAUSE_PREFIX) ?
                cause.substring(DisniAvailability.CAUSE_PREFIX.length()) : cause);
            report.append("\nverdict: NOT READY: ").append(reason).append('\n');
            final String written = write(options.report(), report);
            err.println("reverb-rdma-check: NOT READY: " + reason + written);
            return EXIT_NOT_READY;
        }
        report.append("\nverdict: READY (an ACTIVE port with carrier, memlock ").append(RdmaHostReadiness.mib(
            RdmaHostReadiness.memlockSoftBytes(host.procLimits()))).append(", libdisni loaded, rdma_cm opened)\n");
        out.print(report);
        if (options.factsOnly())
        {
            out.println("reverb-rdma-check: READY" + write(options.report(), report));
            return EXIT_OK;
        }
        final String address = localAddress(host, devices);
        if (address == null)
        {
            report.append("\nno local RDMA interface address (set -D").append(DisniVerbsProvider.LOCAL_ADDRESS_PROP)
                .append(")\n");
            err.println("reverb-rdma-check: FAILED: no IPv4 address on an up interface of an RDMA device" +
                write(options.report(), report));
            return EXIT_FAILED;
        }
        final HardwarePath hardware = host.hardware() != null ? host.hardware() :
            new ProcessHardwarePath(host.repositoryRoot(), libraryDirectory(host.libraryPath()));
        int failures = 0;
        out.println("reverb-rdma-check: running the verbs conformance suite over rdma:// (" + address + ") ...");
        final StepResult conformance = hardware.conformance(address);
        appendStep(report, "verbs conformance suite over rdma:// (loopback through the NIC)", conformance);
        out.println("reverb-rdma-check: conformance suite: " + conformance.summary());
        failures += conformance.passed() ? 0 : 1;

        final List<LatencyTable.Cell> cells = new ArrayList<>();
        for (final String scheme : List.of("rdma", "tcp"))
        {
            out.println("reverb-rdma-check: measuring " + scheme + ":// round trips on " + address + " ...");
            final LatencyRun run = hardware.latency(scheme, address);
            appendStep(report, "engine ping-pong over " + scheme + ":// (" + address + ")", run.outcome());
            cells.addAll(run.cells());
            failures += run.outcome().passed() ? 0 : 1;
        }
        final String table = LatencyTable.format(cells);
        report.append("\n## latency\n").append(table);
        out.print(table);
        if (!LatencyTable.complete(cells))
        {
            failures++;
        }
        if (host.hardware() == null && options.bench())
        {
            final String target = options.peer() == null ? address : options.peer();
            String name = "reverb-bench";
            StepResult result;
            try
            {
                final Step bench = benchStep(host.repositoryRoot(), target, options, libraryDirectory(host.libraryPath()),
                    address);
                name = bench.name();
                out.println("reverb-rdma-check: running " + name + " ...");
                result = bench.run();
            }
            catch (final IllegalArgumentException ex)
            {
                result = new StepResult(false, "not run: " + ex.getMessage(), ""); // a time scale with a typo
            }
            appendStep(report, name, result);
            out.println("reverb-rdma-check: " + name + ": " + result.summary());
            failures += result.passed() ? 0 : 1;
        }
        final String written = write(options.report(), report);
        if (failures > 0)
        {
            err.println("reverb-rdma-check: FAILED: " + failures + " step(s) failed" + written);
            return EXIT_FAILED;
        }
        out.println("reverb-rdma-check: PASSED" + written);
        return EXIT_OK;
    }

    /**
     * READY needs, in this order (the first that fails is the one-line reason; libdisni is loaded last, only when
     * everything readable from files passed): DiSNi's file-level checks (device, rdma_cm node, a native half bundled or on the
     * library path, the export), an ACTIVE port with carrier on a device that is not iWARP, a memlock limit that
     * holds the engine's registrations, and the native half loading and opening rdma_cm.
     */
    private static String verdict(final Host host, final List<RdmaDevices.Device> devices)
    {
        final String files = DisniAvailability.probe(host.sysfsInfiniband(), host.rdmaCmDevice(), host.libraryPath(),
            host.sunNioChExported(), () -> { });
        if (files != null)
        {
            return files;
        }
        final String port = RdmaHostReadiness.portProblem(devices);
        if (port != null)
        {
            return port;
        }
        final String memlock = RdmaHostReadiness.memlockProblem(host.procLimits());
        if (memlock != null)
        {
            return memlock;
        }
        return DisniAvailability.probe(host.sysfsInfiniband(), host.rdmaCmDevice(), host.libraryPath(),
            host.sunNioChExported(), host.nativeProbe());
    }

    private static String localAddress(final Host host, final List<RdmaDevices.Device> devices)
    {
        try
        {
            final InetAddress configured = DisniVerbsContext.configuredLocalAddress(VerbsConfig.defaults().rdmaLocalAddress());
            return (configured != null ? configured : RdmaDevices.defaultAddress(devices, host.interfaces()))
                .getHostAddress();
        }
        catch (final IOException ex)
        {
            return null;
        }
    }

    private static void appendStep(final StringBuilder report, final String name, final StepResult result)
    {
        report.append("\n## ").append(name).append("\nresult: ").append(result.summary()).append('\n')
            .append(result.outputTail());
    }

    static Options parse(final String[] args)
    {
        String peer = null;
        Path report = Paths.get("reverb-rdma-check-report.txt");
        String duration = "10s";
        boolean factsOnly = false;
        boolean bench = true;
        for (int i = 0; i < args.length; i++)
        {
            switch (args[i])
            {
                case "-h":
                case "--help":
                    return null;
                case "--peer":
                    peer = value(args, ++i, "--peer");
                    break;
                case "--report":
                    report = Paths.get(value(args, ++i, "--report"));
                    break;
                case "--duration":
                    duration = value(args, ++i, "--duration");
                    break;
                case "--facts-only":
                    factsOnly = true;
                    break;
                case "--no-bench":
                    bench = false;
                    break;
                default:
                    throw new IllegalArgumentException("unknown option " + args[i]);
            }
        }
        return new Options(peer, report, duration, factsOnly, bench);
    }

    private static String value(final String[] args, final int index, final String option)
    {
        if (index >= args.length || args[index].startsWith("--"))
        {
            throw new IllegalArgumentException(option + " needs a value");
        }
        return args[index];
    }

    private static void appendPort(final StringBuilder report, final Host host, final RdmaDevices.Port port,
        final String address)
    {
        report.append("  port ").append(port.number()).append(": state ").append(orUnknown(port.state()))
            .append(", phys_state ").append(orUnknown(port.physState()))
            .append(port.isActive() && port.hasCarrier() ? " (usable)" : " (not usable: needs ACTIVE and LinkUp)")
            .append(", link layer ").append(orUnknown(port.linkLayer())).append('\n');
        report.append("    rate ").append(orUnknown(port.rate())).append(", active MTU ")
            .append(RdmaHostReadiness.activeMtu(port, host.sysfsNet())).append('\n');
        final RdmaDevices.Gid chosen = RdmaHostReadiness.chosenGid(port, address);
        for (final RdmaDevices.Gid gid : port.gidTable())
        {
            report.append("    gid ").append(gid.index()).append('=').append(gid.gid())
                .append(" type ").append(orUnknown(gid.type()))
                .append(gid.netdev().isEmpty() ? "" : " netdev " + gid.netdev())
                .append(gid.equals(chosen) ? "   <- rdma_cm uses this one for " +
                    ("Ethernet".equalsIgnoreCase(port.linkLayer()) ? address : "this port") : "").append('\n');
        }
        if (port.gidTable().isEmpty())
        {
            report.append("    no GID (no address on the port's network interface?)\n");
        }
        else if (chosen == null && "Ethernet".equalsIgnoreCase(port.linkLayer()))
        {
            report.append("    no GID maps ").append(address == null ? "a local IPv4 address" : address)
                .append(": rdma_cm cannot use this port for it\n");
        }
    }

    private static void appendFacts(final StringBuilder report, final Host host, final List<RdmaDevices.Device> devices)
    {
        final String address = localAddress(host, devices);
        report.append("\n## facts\n");
        if (devices.isEmpty())
        {
            report.append("RDMA devices: none (").append(host.sysfsInfiniband())
                .append(Files.isDirectory(host.sysfsInfiniband()) ? " is empty" : " is absent").append(")\n");
        }
        for (final RdmaDevices.Device device : devices)
        {
            report.append("device ").append(device.name()).append(": ").append(device.transport())
                .append(" (node_type ").append(device.nodeTypeText().isEmpty() ? "?" : device.nodeTypeText()).append(")\n");
            for (final String netdev : device.netdevs())
            {
                report.append("  netdev ").append(netdev).append(": ");
                final List<InetAddress> addresses = host.interfaces().upIpv4(netdev);
                report.append(addresses.isEmpty() ? "down or no IPv4 address" : addresses.toString()).append('\n');
            }
            for (final RdmaDevices.Port port : device.ports())
            {
                appendPort(report, host, port, address);
            }
        }
        report.append("rdma_cm: ").append(host.rdmaCmDevice())
            .append(Files.exists(host.rdmaCmDevice()) ? " present" : " absent (sudo modprobe rdma_ucm)").append('\n');
        report.append("memlock (ulimit -l): ").append(memlock(host.procLimits())).append("; rdma:// needs at least ")
            .append(RdmaHostReadiness.mib(RdmaHostReadiness.requiredMemlockBytes())).append(" (")
            .append(RdmaHostReadiness.defaultMemlockEstimate().parts()).append(")\n");
        final Path library = DisniAvailability.findLibrary(System.mapLibraryName("disni"), host.libraryPath());
        report.append("libdisni: ").append(library == null ?
            "not found on java.library.path [" + host.libraryPath() + "]" : library + " (used instead of the bundled one)")
            .append('\n');
        report.append("native half bundled in reverb-transport-rdma: ").append(NativeLibrary.bundledResource() != null ?
            NativeLibrary.bundledResourceName() : "none for " + System.getProperty("os.name") + '/' +
            System.getProperty("os.arch")).append('\n');
        report.append("--add-exports java.base/sun.nio.ch: ").append(host.sunNioChExported() ? "yes" : "no").append('\n');
    }

    /**
     * @param procLimits {@code /proc/self/limits}.
     * @return the "Max locked memory" soft and hard limits, as the kernel prints them.
     */
    static String memlock(final Path procLimits)
    {
        try
        {
            for (final String line : Files.readAllLines(procLimits, StandardCharsets.US_ASCII))
            {
                if (line.startsWith("Max locked memory"))
                {
                    final String[] fields = line.substring("Max locked memory".length()).trim().split("\\s+");
                    if (fields.length >= 2)
                    {
                        final String note = "unlimited".equals(fields[0]) ? "" :
                            " (registered memory is pinned: raise it, see RDMA-HARDWARE.md)";
                        return "soft " + fields[0] + ", hard " + fields[1] + (fields.length > 2 ? " " + fields[2] : "") + note;
                    }
                }
            }
            return "not listed in " + procLimits;
        }
        catch (final IOException | RuntimeException ex)
        {
            return "unknown (" + procLimits + " unreadable)";
        }
    }

    /** One child process of the hardware path. */
    record Step(String name, List<String> command, Path directory, Map<String, String> environment, long timeoutSeconds,
                Path surefireReport)
    {
        StepResult run()
        {
            if (directory == null)
            {
                return new StepResult(false, "not run: needs the Reverb source checkout (run bin/reverb-rdma-check)", "");
            }
            final Deque<String> tail = new ArrayDeque<>();
            try
            {
                final ProcessBuilder builder = new ProcessBuilder(command).directory(directory.toFile())
                    .redirectErrorStream(true);
                builder.environment().putAll(environment);
                final Process process = builder.start();
                final Thread reader = new Thread(() -> readTail(process, tail), "reverb-rdma-check-output");
                reader.setDaemon(true);
                reader.start();
                if (!process.waitFor(timeoutSeconds, TimeUnit.SECONDS))
                {
                    process.descendants().forEach(ProcessHandle::destroyForcibly);
                    process.destroyForcibly();
                    reader.join(5_000);
                    return new StepResult(false, "timed out after " + timeoutSeconds + " s", join(tail));
                }
                reader.join(5_000);
                final int exit = process.exitValue();
                String summary = "exit " + exit;
                boolean passed = exit == 0;
                if (surefireReport != null)
                {
                    final String counts = surefireCounts(surefireReport);
                    summary += ", " + counts;
                    // A suite that was skipped (e.g. the device vanished) did not pass.
                    passed &= counts.contains("skipped 0") && !counts.startsWith("no report");
                }
                return new StepResult(passed, summary, join(tail));
            }
            catch (final IOException ex)
            {
                return new StepResult(false, "could not start: " + ex.getMessage(), join(tail));
            }
            catch (final InterruptedException ex)
            {
                Thread.currentThread().interrupt();
                return new StepResult(false, "interrupted", join(tail));
            }
        }
    }

    /** What a step did. */
    record StepResult(boolean passed, String summary, String outputTail)
    {
    }

    private static Step benchStep(
        final Path root, final String target, final Options options, final String libraryDirectory, final String address)
    {
        final List<String> bench = new ArrayList<>(List.of(
            root == null ? "bin/reverb-bench" : root.resolve("bin/reverb-bench").toString()));
        if (options.peer() == null)
        {
            bench.addAll(List.of("--compare", "rdma://" + target + ":0,tcp://" + target + ":0,grpc://" + target + ":0"));
        }
        else
        {
            // Servers the user started on the peer (RDMA-HARDWARE.md): rdma on 7000, tcp on 7001, grpc on 7002.
            bench.addAll(List.of("--compare", "rdma://" + target + ":7000,tcp://" + target + ":7001,grpc://" + target + ":7002",
                "--server", "none"));
        }
        final Path html = options.report().toAbsolutePath().resolveSibling("reverb-rdma-check-bench.html");
        bench.addAll(List.of("-z", options.duration(), "--payload", "64,4k,1MiB", "-q", "--html", html.toString()));
        // a slow host (a VM under emulation: the suites' time scale) takes minutes to start each server's JVM
        final double scale = TestScale.time();
        if (scale > 1)
        {
            bench.addAll(List.of("--server-start-timeout", Math.round(60 * scale) + "s"));
        }
        return new Step("reverb-bench rdma:// vs tcp:// vs grpc-java" + (options.peer() == null ? "" : " against " + target),
            bench, root, Map.of("LD_LIBRARY_PATH", libraryDirectory,
                "REVERB_BENCH_JVM_OPTS", "-Xms1g -Xmx1g -D" + DisniVerbsProvider.LOCAL_ADDRESS_PROP + "=" + address),
            1_800, null);
    }

    /**
     * @param report a Surefire XML report.
     * @return "tests N, failures F, errors E, skipped S", or why not.
     */
    static String surefireCounts(final Path report)
    {
        final String xml;
        try
        {
            xml = Files.readString(report, StandardCharsets.UTF_8);
        }
        catch (final IOException ex)
        {
            return "no report at " + report;
        }
        final int suite = xml.indexOf("<testsuite");
        final String head = suite < 0 ? "" : xml.substring(suite, Math.max(suite, xml.indexOf('>', suite)));
        return "tests " + attribute(head, "tests") + ", failures " + attribute(head, "failures") +
            ", errors " + attribute(head, "errors") + ", skipped " + attribute(head, "skipped");
    }

    private static String attribute(final String element, final String name)
    {
        final Matcher matcher = Pattern.compile("\\s" + name + "=\"([^\"]*)\"").matcher(element);
        return matcher.find() ? matcher.group(1) : "?";
    }

    private static void readTail(final Process process, final Deque<String> tail)
    {
        try (BufferedReader reader = new BufferedReader(
            new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8)))
        {
            String line;
            while ((line = reader.readLine()) != null)
            {
                synchronized (tail)
                {
                    tail.addLast(line);
                    if (tail.size() > TAIL_LINES)
                    {
                        tail.removeFirst();
                    }
                }
            }
        }
        catch (final IOException ex)
        {
            // process ended
        }
    }

    private static String join(final Deque<String> tail)
    {
        synchronized (tail)
        {
            final StringBuilder text = new StringBuilder();
            text.append("(last ").append(tail.size()).append(" lines of output)\n");
            for (final String line : tail)
            {
                text.append("    ").append(line).append('\n');
            }
            return text.toString();
        }
    }

    private static String libraryDirectory(final String libraryPath)
    {
        final Path library = DisniAvailability.findLibrary(System.mapLibraryName("disni"), libraryPath);
        final String existing = System.getenv("LD_LIBRARY_PATH");
        final String dir = library == null ? "" : library.getParent().toString();
        return existing == null || existing.isEmpty() ? dir : dir.isEmpty() ? existing : dir + ":" + existing;
    }

    private static String write(final Path file, final CharSequence report)
    {
        try
        {
            Files.writeString(file, report, StandardCharsets.UTF_8);
            return " (report: " + file + ")";
        }
        catch (final IOException | RuntimeException ex)
        {
            return " (report not written: " + file + ": " + ex.getMessage() + ")";
        }
    }

    static String oneLine(final String text)
    {
        return String.valueOf(text).replaceAll("\\s*[\\r\\n]+\\s*", " ").trim();
    }

    private static String orUnknown(final String value)
    {
        return value == null || value.isEmpty() ? "?" : value;
    }

    private static String hostName()
    {
        try
        {
            return InetAddress.getLocalHost().getHostName();
        }
        catch (final IOException | RuntimeException ex)
        {
            return "?";
        }
    }
}
