package io.reverb.rdma.engine;

/**
 * Checks, before the first use of Agrona, that the JVM lets Agrona reach {@code jdk.internal.misc}.
 *
 * <p>Agrona 2.x (registered buffers, rings) needs {@code --add-exports java.base/jdk.internal.misc=ALL-UNNAMED}.
 * Without it, the first touch of Agrona fails with an {@link IllegalAccessError} deep in a stack, and every
 * later touch with a {@link NoClassDefFoundError} that no longer names the cause. This check looks at the module
 * export itself (it loads Agrona's class without initialising it, so it has no side effect) and fails with one
 * message that names the flag and where to put it.
 */
public final class JvmAccessCheck
{
    /** The JVM option Reverb's transports need. */
    public static final String ADD_EXPORTS = "--add-exports java.base/jdk.internal.misc=ALL-UNNAMED";

    /** The same option in the one form the JVM accepts from {@code JAVA_TOOL_OPTIONS} (with '=', no space). */
    public static final String ADD_EXPORTS_JOINED = "--add-exports=java.base/jdk.internal.misc=ALL-UNNAMED";

    private static final String AGRONA_UNSAFE_CLASS = "org.agrona.UnsafeApi";
    private static final String PACKAGE = "jdk.internal.misc";

    private static volatile boolean verified;

    private JvmAccessCheck()
    {
    }

    /**
     * Returns when Agrona can reach {@code jdk.internal.misc}; cheap after the first successful call.
     *
     * @throws IllegalStateException naming the missing JVM option and where to put it.
     */
    public static void requireAgronaAccess()
    {
        if (verified)
        {
            return;
        }
        final Module agrona;
        try
        {
            agrona = Class.forName(AGRONA_UNSAFE_CLASS, false, JvmAccessCheck.class.getClassLoader()).getModule();
        }
        catch (final ClassNotFoundException ex)
        {
            throw new IllegalStateException("Agrona (org.agrona:agrona 2.x) is not on the class path: " +
                "reverb-transport needs it", ex);
        }
        if (!isExported(agrona))
        {
            throw new IllegalStateException(missingExportMessage());
        }
        verified = true;
    }

    /**
     * @param module the module that must be able to access {@code jdk.internal.misc}.
     * @return whether {@code java.base} exports {@code jdk.internal.misc} to it.
     */
    static boolean isExported(final Module module)
    {
        return Object.class.getModule().isExported(PACKAGE, module);
    }

    /** @return the message of the error thrown when the export is missing. */
    static String missingExportMessage()
    {
        return "Reverb's RDMA transports use Agrona, which needs the JVM option " + ADD_EXPORTS +
            " and this JVM was started without it. Add it where the JVM is launched: " +
            "on the java command line (java " + ADD_EXPORTS + " ...); " +
            "in Maven Surefire/Failsafe tests as <argLine>" + ADD_EXPORTS + "</argLine>; " +
            "in Gradle tests as jvmArgs(\"--add-exports\", \"java.base/jdk.internal.misc=ALL-UNNAMED\"); " +
            "in an executable jar's META-INF/MANIFEST.MF as 'Add-Exports: java.base/jdk.internal.misc'; " +
            "or for any launcher through the environment: JAVA_TOOL_OPTIONS=" + ADD_EXPORTS_JOINED +
            " (there only this form, with '=', works).";
    }
}
