package io.reverb.rdma.provider.disni;

import static org.junit.platform.engine.discovery.DiscoverySelectors.selectClass;

import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import org.junit.platform.launcher.Launcher;
import org.junit.platform.launcher.LauncherDiscoveryRequest;
import org.junit.platform.launcher.core.LauncherDiscoveryRequestBuilder;
import org.junit.platform.launcher.core.LauncherFactory;
import org.junit.platform.launcher.listeners.SummaryGeneratingListener;
import org.junit.platform.launcher.listeners.TestExecutionSummary;

/**
 * Runs the verbs conformance suite over {@code rdma://} ({@link DisniConformanceTest}) with the JUnit Platform
 * launcher, without Maven: what {@code bin/reverb-rdma-check} runs on an RDMA host from its bundled jar, where
 * there may be neither Maven nor network. Prints one summary line, {@code conformance: tests N, failures F,
 * skipped S}, then each failure; exits 0 only if every test ran and passed.
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
        final TestExecutionSummary summary = run();
        System.exit(passed(summary) ? 0 : 1);
    }

    /** @return the summary of one run of the suite in this JVM (printed on System.out). */
    static TestExecutionSummary run()
    {
        final LauncherDiscoveryRequest request = LauncherDiscoveryRequestBuilder.request()
            .selectors(selectClass(DisniConformanceTest.class)).build();
        final Launcher launcher = LauncherFactory.create();
        final SummaryGeneratingListener listener = new SummaryGeneratingListener();
        launcher.execute(request, listener);
        final TestExecutionSummary summary = listener.getSummary();
        System.out.println(line(summary));
        summary.printFailuresTo(new PrintWriter(System.out, true, StandardCharsets.UTF_8), 20);
        return summary;
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
     * @param summary a run.
     * @return true if tests ran and every one passed (a skipped one, e.g. a device that vanished, is not a pass).
     */
    static boolean passed(final TestExecutionSummary summary)
    {
        return summary.getTestsFoundCount() > 0 && summary.getTotalFailureCount() == 0 &&
            summary.getTestsSucceededCount() == summary.getTestsFoundCount();
    }
}
