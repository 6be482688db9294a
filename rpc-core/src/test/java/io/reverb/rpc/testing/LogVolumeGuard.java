package io.reverb.rpc.testing;

import java.io.OutputStream;
import java.io.PrintStream;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * Fails a test class that writes more than {@value #DEFAULT_LIMIT} lines to stdout/stderr (a log flood or a
 * livelocked logger), and stops forwarding its output after {@value #DEFAULT_CAP} lines so that one runaway
 * code path cannot fill the disk with a build log. Registered for every test class through JUnit's extension
 * auto-detection (src/test/resources: junit-platform.properties and META-INF/services); limits can be set
 * with {@code -Dreverb.test.maxLogLines=N} and {@code -Dreverb.test.logLineCap=N}.
 *
 * <p>Output of child processes started with an inherited stderr bypasses {@code System.err} and is not counted.
 */
public final class LogVolumeGuard implements BeforeAllCallback, AfterAllCallback
{
    /** Lines a test class may write. */
    public static final int DEFAULT_LIMIT = 3000;
    /** Lines after which a test class's output is dropped. */
    public static final int DEFAULT_CAP = 20_000;

    private static final AtomicLong LINES = new AtomicLong();
    private static final Object INSTALL_LOCK = new Object();
    private static boolean installed;

    @Override
    public void beforeAll(final ExtensionContext context)
    {
        synchronized (INSTALL_LOCK)
        {
            if (!installed)
            {
                final long cap = Long.getLong("reverb.test.logLineCap", DEFAULT_CAP);
                System.setOut(new PrintStream(new CountingStream(System.out, cap), true));
                System.setErr(new PrintStream(new CountingStream(System.err, cap), true));
                installed = true;
            }
        }
        LINES.set(0);
    }

    @Override
    public void afterAll(final ExtensionContext context)
    {
        checkAndReset(context.getDisplayName(), Long.getLong("reverb.test.maxLogLines", DEFAULT_LIMIT));
    }

    /**
     * @param what  the test class, for the message.
     * @param limit most lines allowed since the class started.
     * @throws AssertionError if more were written.
     */
    static void checkAndReset(final String what, final long limit)
    {
        final long lines = LINES.getAndSet(0);
        if (lines > limit)
        {
            throw new AssertionError(what + " wrote " + lines + " lines to stdout/stderr, more than " +
                limit + ": something logs without bound");
        }
    }

    /** Counts newlines; past the cap, drops bytes and says so once. */
    private static final class CountingStream extends OutputStream
    {
        private final PrintStream target;
        private final long cap;
        private volatile boolean noticed;

        CountingStream(final PrintStream target, final long cap)
        {
            this.target = target;
            this.cap = cap;
        }

        @Override
        public void write(final int b)
        {
            if (b == '\n' && LINES.incrementAndGet() > cap)
            {
                notice();
                return;
            }
            if (LINES.get() <= cap)
            {
                target.write(b);
            }
        }

        @Override
        public void write(final byte[] bytes, final int offset, final int length)
        {
            int newlines = 0;
            for (int i = offset; i < offset + length; i++)
            {
                if (bytes[i] == '\n')
                {
                    newlines++;
                }
            }
            final long total = LINES.addAndGet(newlines);
            if (total - newlines >= cap)
            {
                notice();
                return;
            }
            target.write(bytes, offset, length);
        }

        @Override
        public void flush()
        {
            target.flush();
        }

        private void notice()
        {
            if (!noticed)
            {
                noticed = true;
                target.println("[LogVolumeGuard] more than " + cap + " lines from one test class: the rest is dropped");
                target.flush();
            }
        }
    }
}
