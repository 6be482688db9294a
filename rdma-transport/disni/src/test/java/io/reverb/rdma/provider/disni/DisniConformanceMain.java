package io.reverb.rdma.provider.disni;

import static org.junit.platform.engine.discovery.DiscoverySelectors.selectClass;

import io.reverb.rdma.verbs.TestScale;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.junit.platform.launcher.Launcher;
import org.junit.platform.launcher.LauncherDiscoveryRequest;
import org.junit.platform.launcher.TagFilter;
import org.junit.platform.launcher.TestIdentifier;
import org.junit.platform.launcher.TestPlan;
import org.junit.platform.launcher.core.LauncherDiscoveryRequestBuilder;
import org.junit.platform.launcher.core.LauncherFactory;
import org.junit.platform.launcher.listeners.SummaryGeneratingListener;
import org.junit.platform.launcher.listeners.TestExecutionSummary;

/**
 * Runs the verbs conformance suite over {@code rdma://} ({@link DisniConformanceTest}) with the JUnit Platform
 * launcher, without Maven: what {@code bin/reverb-rdma-check} runs on an RDMA host from its bundled jar, where
 * there may be neither Maven nor network. The tests that cannot run over the device in use are excluded by their
 * JUnit tag (over a real device the emulation-only ones; over the emulated one none: its peer-process test runs with
 * a peer in the same JVM) and named on the summary line,
 * {@code conformance: tests N, succeeded P, failures F, skipped S; excluded ...}, then each failure is printed; exits
 * 0 only if every test left ran and passed (one rule, {@link #passed}).
 *
 * <pre>
 *   java --add-exports java.base/sun.nio.ch=ALL-UNNAMED -cp reverb-rdma-check.jar \
 *       io.reverb.rdma.provider.disni.DisniConformanceMain [--address ipv4:0]
 * </pre>
 */
public final class DisniConformanceMain
{
    private DisniConformanceMain()
    {
    }

    /**
     * @param args {@code --address ipv4:port} (optional: the local RDMA interface, as DisniConformanceTest's property).
     */
    public static void main(final String[] args)
    {
        for (int i = 0; i < args.length; i++)
        {
            if ("--address".equals(args[i]) && i + 1 < args.length)
            {
                System.setProperty(DisniConformanceTest.ADDRESS_PROP, args[++i]);
            }
            else
            {
                System.err.println("usage: DisniConformanceMain [--address ipv4:port]");
                System.exit(64);
            }
        }
        System.exit(run().passed() ? 0 : 1);
    }

    /**
     * One run of the suite.
     *
     * @param summary     what ran
     * @param excludedTag the tag left out for the device in use, or null for none
     * @param excluded    the tests that tag left out
     */
    record Run(TestExecutionSummary summary, String excludedTag, List<String> excluded)
    {
        /** @return the one-line summary, with the excluded tests and why. */
        String line()
        {
            return DisniConformanceMain.line(summary) + excludedLine(excludedTag, excluded);
        }

        /** @return {@link DisniConformanceMain#passed}. */
        boolean passed()
        {
            return DisniConformanceMain.passed(summary);
        }
    }

    /** @return one run of the suite in this JVM (its line and failures printed on System.out). */
    static Run run()
    {
        final String excludedTag = excludedTag(RdmaTestDevice.isEmulated());
        final Launcher launcher = LauncherFactory.create();
        final List<String> excluded = excludedTests(launcher, excludedTag);
        final SummaryGeneratingListener listener = new SummaryGeneratingListener();
        System.out.println("conformance: " + TestScale.describe() + (TestScale.time() > 1 ? "; JUnit @Timeout off" : ""));
        launcher.execute(request(excludedTag), listener);
        final Run run = new Run(listener.getSummary(), excludedTag, excluded);
        System.out.println(run.line());
        run.summary().printFailuresTo(new PrintWriter(System.out, true, StandardCharsets.UTF_8), 20);
        return run;
    }

    /**
     * @param emulated whether the suite runs over the emulated device.
     * @return the tag of the tests that cannot run over that device: the emulation-only ones over a real device; null
     *         over the emulated device, where every test runs (the peer-process one with a peer in this JVM, whose
     *         connection vanishes as a killed process's does: {@code DisniConformanceTest#startMortalPeer}).
     */
    static String excludedTag(final boolean emulated)
    {
        return emulated ? null : RdmaTestDevice.EMULATION_ONLY_TAG;
    }

    /**
     * @param excludedTag the tag left out ({@link #excludedTag(boolean)}), or null for none.
     * @return the suite without the tests of that tag.
     */
    static LauncherDiscoveryRequest request(final String excludedTag)
    {
        // On a slow host (TestScale) the suite's waits are scaled; JUnit cannot scale an @Timeout, so it is off there
        // and the caller's limit on the whole run bounds it.
        final LauncherDiscoveryRequestBuilder request = LauncherDiscoveryRequestBuilder.request()
            .selectors(selectClass(DisniConformanceTest.class))
            .configurationParameter("junit.jupiter.execution.timeout.mode", TestScale.time() > 1 ? "disabled" : "enabled");
        return (excludedTag == null ? request : request.filters(TagFilter.excludeTags(excludedTag))).build();
    }

    /**
     * @param launcher    a launcher.
     * @param excludedTag the tag left out, or null for none.
     * @return the names of the suite's tests that tag leaves out.
     */
    static List<String> excludedTests(final Launcher launcher, final String excludedTag)
    {
        if (excludedTag == null)
        {
            return List.of();
        }
        final TestPlan all = launcher.discover(LauncherDiscoveryRequestBuilder.request()
            .selectors(selectClass(DisniConformanceTest.class)).build());
        final List<String> excluded = new ArrayList<>();
        collect(all, all.getRoots(), excludedTag, excluded);
        return excluded;
    }

    private static void collect(
        final TestPlan plan, final Set<TestIdentifier> ids, final String tag, final List<String> excluded)
    {
        for (final TestIdentifier id : ids)
        {
            if (id.isTest() && id.getTags().stream().anyMatch(t -> t.getName().equals(tag)))
            {
                excluded.add(id.getDisplayName());
            }
            collect(plan, plan.getChildren(id), tag, excluded);
        }
    }

    private static String excludedLine(final String tag, final List<String> excluded)
    {
        return excluded.isEmpty() ? "" : "; excluded " + excluded.size() + " " + tag + " (need the emulated device): " +
            String.join(", ", excluded);
    }

    /**
     * @param summary a run.
     * @return the one-line summary.
     */
    static String line(final TestExecutionSummary summary)
    {
        return "conformance: tests " + summary.getTestsFoundCount() + ", succeeded " + summary.getTestsSucceededCount() +
            ", failures " + summary.getTotalFailureCount() + ", skipped " +
            (summary.getTestsSkippedCount() + summary.getTestsAbortedCount());
    }

    /**
     * The one rule of the check, over a real device and the emulated one alike: the tests that cannot run over the
     * device are excluded by tag before the run ({@link #excludedTag(boolean)}), and of the rest every one must
     * run and pass.
     *
     * @param summary a run.
     * @return true if tests ran and every one passed (a skipped one, e.g. a device that vanished, is not a pass).
     */
    static boolean passed(final TestExecutionSummary summary)
    {
        return summary.getTestsFoundCount() > 0 && summary.getTotalFailureCount() == 0 &&
            summary.getTestsSucceededCount() == summary.getTestsFoundCount();
    }
}
