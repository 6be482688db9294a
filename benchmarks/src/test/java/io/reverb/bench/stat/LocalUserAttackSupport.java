package io.reverb.bench.stat;

import io.reverb.common.counters.ProcessCounters;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

/** Shared by the local-user attack cases: root check, shell commands, the counters' log records. */
final class LocalUserAttackSupport
{
    private LocalUserAttackSupport()
    {
    }

    static boolean root() throws IOException
    {
        return ((Number)Files.getAttribute(Path.of("/proc/self"), "unix:uid")).intValue() == 0;
    }

    /** Runs a command; returns its exit code (output discarded to the test's log). */
    static int sh(final String... command) throws IOException, InterruptedException
    {
        final Process process = new ProcessBuilder(command).inheritIO().start();
        if (!process.waitFor(60, TimeUnit.SECONDS))
        {
            process.destroyForcibly();
            return -1;
        }
        return process.exitValue();
    }

    /** Records what {@link ProcessCounters} logs (through java.util.logging, the System.Logger default), any level. */
    static final class CountersLog extends Handler implements AutoCloseable
    {
        final List<LogRecord> records = new CopyOnWriteArrayList<>();
        private final Logger logger = Logger.getLogger(ProcessCounters.class.getName());
        private final Level level = logger.getLevel();

        CountersLog()
        {
            logger.setLevel(Level.ALL);
            setLevel(Level.ALL);
            logger.addHandler(this);
        }

        long warnings()
        {
            return records.stream().filter(r -> r.getLevel().intValue() >= Level.WARNING.intValue()).count();
        }

        String all()
        {
            final StringBuilder text = new StringBuilder();
            records.forEach(r -> text.append(r.getLevel()).append(' ').append(r.getMessage()).append('\n'));
            return text.toString();
        }

        @Override
        public void publish(final LogRecord record)
        {
            records.add(record);
        }

        @Override
        public void flush()
        {
        }

        @Override
        public void close()
        {
            logger.removeHandler(this);
            logger.setLevel(level);
        }
    }
}
