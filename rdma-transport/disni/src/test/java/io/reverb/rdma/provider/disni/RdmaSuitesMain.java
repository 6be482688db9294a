package io.reverb.rdma.provider.disni;

import static org.junit.platform.engine.discovery.ClassNameFilter.includeClassNamePatterns;
import static org.junit.platform.engine.discovery.DiscoverySelectors.selectPackage;

import io.reverb.rdma.verbs.TestScale;
import java.io.PrintStream;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.platform.engine.TestExecutionResult;
import org.junit.platform.engine.support.descriptor.ClassSource;
import org.junit.platform.launcher.LauncherDiscoveryRequest;
import org.junit.platform.launcher.TagFilter;
import org.junit.platform.launcher.TestExecutionListener;
import org.junit.platform.launcher.TestIdentifier;
import org.junit.platform.launcher.core.LauncherDiscoveryRequestBuilder;
import org.junit.platform.launcher.core.LauncherFactory;

/**
 * Runs the {@code rdma://} suites of the {@code rdma-emulated} Surefire execution (the verbs conformance suite, the
 * engine suites, rpc-core's call suites and reverb-grpc's suites, grpc-java's interop cases among them:
 * {@code DisniConformanceTest}, {@code RdmaEngine*Test}, {@code RdmaRpc*Test}, {@code RdmaGrpc*Test}) without Maven,
 * over whatever device this JVM finds: what
 * {@code bin/reverb-rdma-vm test} runs inside a VM on Soft-RoCE with {@code -Dreverb.test.rdma.emulation=false}. The
 * tests that cannot run over the device in use are excluded by tag (as {@link DisniConformanceMain}); prints one line
 * per class (with its time) and one per test that failed, aborted (skipped) or was left out by a condition of its
 * class (each with the cause), then {@code suites: tests N, succeeded P, failures F, skipped S, left out L}; exits 0
 * only if every test left ran and passed (a test that aborts on an assumption fails the run). On a
 * slow host ({@link TestScale}) the suites' waits are scaled and JUnit's {@code @Timeout}s are off.
 */
public final class RdmaSuitesMain
{
    private RdmaSuitesMain()
    {
    }

    /**
     * @param args class-name patterns (regular expressions) to run instead of the default ones.
     */
    public static void main(final String[] args)
    {
        final String[] patterns = args.length > 0 ? args : new String[] {
            ".*\\.DisniConformanceTest", ".*\\.RdmaEngine\\w*Test", ".*\\.RdmaRpc\\w*Test", ".*\\.RdmaGrpc\\w*Test"};
        final String unavailable = RdmaTestDevice.unavailabilityCause();
        if (unavailable != null)
        {
            System.out.println("suites: no RDMA device: " + unavailable);
            System.exit(1);
        }
        final String excludedTag = DisniConformanceMain.excludedTag(RdmaTestDevice.isEmulated()); // null: none
        // A slow host (TestScale: a VM under software emulation) scales the suites' own waits; JUnit cannot scale an
        // @Timeout, so there they are off and the caller's limit on the whole run bounds it instead.
        final boolean slowHost = TestScale.time() > 1;
        System.out.println("suites: " + TestScale.describe() + (slowHost ? "; JUnit @Timeout off" : ""));
        final LauncherDiscoveryRequestBuilder builder = LauncherDiscoveryRequestBuilder.request()
            .selectors(selectPackage("io.reverb.rdma"), selectPackage("io.reverb.grpc"),
                selectPackage("io.grpc.testing.integration")) // grpc-java's interop cases, RdmaGrpcInteropSuiteTest
            .configurationParameter("junit.jupiter.execution.timeout.mode", slowHost ? "disabled" : "enabled")
            .filters(includeClassNamePatterns(patterns));
        final LauncherDiscoveryRequest request =
            (excludedTag == null ? builder : builder.filters(TagFilter.excludeTags(excludedTag))).build();
        final Listener listener = new Listener(System.out);
        LauncherFactory.create().execute(request, listener);
        System.out.println("suites: tests " + listener.tests + ", succeeded " + listener.succeeded + ", failures " +
            listener.failed + ", skipped " + listener.skipped + ", left out " + listener.leftOut + " (excluded tag " +
            (excludedTag == null ? "none" : excludedTag) + ")");
        System.exit(listener.tests.get() > 0 && listener.failed.get() == 0 &&
            listener.succeeded.get() == listener.tests.get() ? 0 : 1);
    }

    /** Counts per class and prints every test that did not pass, with why. */
    private static final class Listener implements TestExecutionListener
    {
        private final PrintStream out;
        private final AtomicInteger tests = new AtomicInteger();
        private final AtomicInteger succeeded = new AtomicInteger();
        private final AtomicInteger failed = new AtomicInteger();
        private final AtomicInteger skipped = new AtomicInteger();
        /** Tests a condition of their class leaves out here, each printed with its reason: not run, not failed. */
        private final AtomicInteger leftOut = new AtomicInteger();
        private final Map<String, int[]> perClass = new ConcurrentHashMap<>();
        /** When each class started, to print its time: what to balance when the suites are split across VMs. */
        private final Map<String, Long> started = new ConcurrentHashMap<>();

        Listener(final PrintStream out)
        {
            this.out = out;
        }

        @Override
        public void executionStarted(final TestIdentifier id)
        {
            if (id.getSource().map(s -> s instanceof ClassSource).orElse(false))
            {
                started.put(className(id), System.nanoTime());
            }
        }

        @Override
        public void executionSkipped(final TestIdentifier id, final String reason)
        {
            if (id.isTest())
            {
                // disabled before it ran (@Disabled or an ExecutionCondition of its class, as the tag filter does for
                // emulation-only tests): left out with its reason; a test that aborts while running still fails the run
                leftOut.incrementAndGet();
                out.println("  LEFT OUT " + id.getLegacyReportingName() + ": " + reason);
            }
        }

        @Override
        public void executionFinished(final TestIdentifier id, final TestExecutionResult result)
        {
            if (id.isTest())
            {
                tests.incrementAndGet();
                final int[] counts = perClass.computeIfAbsent(className(id), k -> new int[2]);
                counts[0]++;
                switch (result.getStatus())
                {
                    case SUCCESSFUL:
                        succeeded.incrementAndGet();
                        counts[1]++;
                        break;
                    case ABORTED:
                        skipped.incrementAndGet();
                        out.println("  SKIPPED " + className(id) + "." + id.getLegacyReportingName() + ": " +
                            result.getThrowable().map(Throwable::getMessage).orElse(""));
                        break;
                    default:
                        failed.incrementAndGet();
                        out.println("  FAILED " + className(id) + "." + id.getLegacyReportingName() + ": " +
                            result.getThrowable().map(Throwable::toString).orElse(""));
                        result.getThrowable().ifPresent(t -> t.printStackTrace(out));
                        break;
                }
            }
            else if (result.getStatus() == TestExecutionResult.Status.FAILED)
            {
                // A class or container that failed as a whole (@BeforeAll, a parameter source): counted as a failure.
                failed.incrementAndGet();
                out.println("  FAILED " + id.getDisplayName() + ": " +
                    result.getThrowable().map(Throwable::toString).orElse(""));
                result.getThrowable().ifPresent(t -> t.printStackTrace(out));
            }
            if (id.getSource().map(s -> s instanceof ClassSource).orElse(false) && perClass.containsKey(className(id)))
            {
                final int[] counts = perClass.get(className(id));
                final Long start = started.get(className(id));
                out.println(className(id) + ": " + counts[1] + "/" + counts[0] + " passed" + (start == null ? "" :
                    String.format(Locale.ROOT, " (%.1f s)", (System.nanoTime() - start) / 1e9)));
            }
        }

        /** The simple name of the test's class: the {@code class} segment of its id (Jupiter), or {@code runner} (JUnit 4). */
        private static String className(final TestIdentifier id)
        {
            final String uid = id.getUniqueId();
            for (final String segment : new String[] {"[class:", "[runner:"})
            {
                final int start = uid.indexOf(segment);
                if (start >= 0)
                {
                    final String name = uid.substring(start + segment.length(), uid.indexOf(']', start));
                    return name.substring(name.lastIndexOf('.') + 1);
                }
            }
            return id.getDisplayName();
        }
    }
}
