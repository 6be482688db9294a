package io.reverb.common.counters;

import java.io.IOException;
import java.lang.System.Logger.Level;
import java.nio.ByteBuffer;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.SecureRandom;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import java.util.function.LongSupplier;
import org.agrona.concurrent.AtomicBuffer;
import org.agrona.concurrent.EpochClock;
import org.agrona.concurrent.SystemEpochClock;
import org.agrona.concurrent.UnsafeBuffer;
import org.agrona.concurrent.status.AtomicCounter;
import org.agrona.concurrent.status.ConcurrentCountersManager;
import org.agrona.concurrent.status.CountersManager;

/**
 * The live counters of this process (engines, connections, pollers, server methods) in one memory-mapped file, in
 * the layout of {@link CountersLayout}, so that {@code bin/reverb-stat} can read them with no registry, agent or
 * port. Both layers write into the same file: the engine and rpc-core each {@link #acquire()} the one shared
 * instance and {@link #release()} it when they close.
 *
 * <p>The file is {@code <dir>/reverb-<pid>-<random>.counters}, mode 0600, in a per-user directory of mode 0700
 * ({@link #directory()}). The process holds an exclusive lock on it while it lives (the kernel drops the lock
 * when the process dies, however it dies), which is how a reader tells a live file from the stale file of a dead
 * process; each new instance deletes the stale files it finds. The file is deleted when the last holder releases
 * the instance and, failing that, by a shutdown hook.
 *
 * <p>Settings, read once (system property, else environment variable):
 * <ul>
 * <li>{@code reverb.counters} / {@code REVERB_COUNTERS}: {@code off} keeps the counters in this process's memory
 * only (Micrometer and {@code stats()} still read them); default on.</li>
 * <li>{@code reverb.counters.dir} / {@code REVERB_COUNTERS_DIR}: the directory; default
 * {@code /dev/shm/reverb-stat-<user>} where {@code /dev/shm} exists, else
 * {@code <java.io.tmpdir>/reverb-stat-<user>}.</li>
 * <li>{@code reverb.counters.max}: how many counters the file holds (default 8192, 128 bytes of values and 512 of
 * metadata each: a 5 MiB file, written in full when created). Counters beyond it stay in memory.</li>
 * </ul>
 *
 * <p>Defences against other local users and a full file system: the directory must be a real directory (not a
 * link) of this process's uid, mode 0700, else the counters stay in memory with one warning naming its owner. The
 * file is written in full (zeros) before it is mapped, so no page of it is left to allocate later: a full
 * {@code /dev/shm} fails the creation (counters in memory, one warning) instead of raising SIGBUS, which the JVM
 * turns into an {@link InternalError}, on a later counter. Should a mapped page fault anyway (the file truncated
 * behind this process's back), the fault is caught where counters are allocated, relabelled and sampled, warned
 * about once, and every later counter stays in memory: best effort, as the JVM may deliver such an error after the
 * faulting access, outside any catch.
 */
public final class ProcessCounters
{
    /** Property (and, upper-cased with '_', environment variable) that turns the file off. */
    public static final String ENABLED_PROPERTY = "reverb.counters";
    /** Property of the directory. */
    public static final String DIR_PROPERTY = "reverb.counters.dir";
    /** Environment variable of the directory. */
    public static final String DIR_ENV = "REVERB_COUNTERS_DIR";
    /** Property of the file's capacity in counters. */
    public static final String MAX_PROPERTY = "reverb.counters.max";
    /** Default capacity in counters. */
    public static final int DEFAULT_MAX_COUNTERS = 8192;
    /**
     * How often gauges are sampled and the heartbeat written: once a second, as often as {@code reverb-stat --watch}
     * prints by default, and one wake-up a second of an otherwise idle process. Counters are written as they count,
     * not sampled; a gauge (a state such as credits available) that {@code reverb-stat} prints is at most this old.
     */
    public static final long SAMPLE_PERIOD_MS = 1000;
    /**
     * A freed counter's slot is not reused before this, so a late write to it cannot land in another counter. After
     * it the slot is reused (Agrona's free list): connections that come and go do not use the file up.
     */
    static final long FREE_TO_REUSE_MS = 2_000;
    /** The clock of that grace period (tests set a manual one before the first {@link #acquire()}). */
    static volatile EpochClock reuseClock = SystemEpochClock.INSTANCE;

    private static final System.Logger LOG = System.getLogger(ProcessCounters.class.getName());
    private static final Object LOCK = new Object();
    private static ProcessCounters shared;

    private final Path file;
    private final FileChannel channel;
    private final FileLock lock;
    private final CountersManager manager;
    private final AtomicBuffer header;
    private final AtomicLong groupIds = new AtomicLong();
    private final CopyOnWriteArrayList<Sampled> gauges = new CopyOnWriteArrayList<>();
    private final Thread shutdownHook;
    private final Thread sampler;
    private volatile boolean running = true;
    private volatile boolean fullReported;
    /** A page of the mapping faulted: nothing more is allocated in the file. */
    private volatile boolean faulted;
    /** One warning per process for a file not created (each later fallback logs at debug level). */
    private static final AtomicBoolean FALLBACK_WARNED = new AtomicBoolean();
    private int references;

    private ProcessCounters(final Path file, final FileChannel channel, final FileLock lock, final AtomicBuffer whole,
        final int maxCounters)
    {
        this.file = file;
        this.channel = channel;
        this.lock = lock;
        this.header = new UnsafeBuffer(whole, 0, CountersLayout.HEADER_LENGTH);
        final int metadataLength = CountersLayout.metadataLength(maxCounters);
        final AtomicBuffer metadata = new UnsafeBuffer(whole, CountersLayout.HEADER_LENGTH, metadataLength);
        final AtomicBuffer values = new UnsafeBuffer(whole, CountersLayout.HEADER_LENGTH + metadataLength,
            CountersLayout.valuesLength(maxCounters));
        this.manager = new ConcurrentCountersManager(metadata, values, StandardCharsets.US_ASCII, reuseClock, FREE_TO_REUSE_MS);
        writeHeader(metadataLength, CountersLayout.valuesLength(maxCounters));
        if (file != null)
        {
            shutdownHook = new Thread(this::deleteFile, "reverb-counters-cleanup");
            Runtime.getRuntime().addShutdownHook(shutdownHook);
        }
        else
        {
            shutdownHook = null;
        }
        sampler = new Thread(this::sampleLoop, "reverb-counters");
        sampler.setDaemon(true);
        sampler.start();
    }

    /**
     * Takes a reference on the process's counters, creating the file on the first.
     *
     * @return the shared instance; give it back with {@link #release()}.
     */
    public static ProcessCounters acquire()
    {
        synchronized (LOCK)
        {
            if (shared == null)
            {
                shared = open();
            }
            shared.references++;
            return shared;
        }
    }

    /** @return the shared instance if one is held, else null (for an in-process reader). */
    public static ProcessCounters current()
    {
        synchronized (LOCK)
        {
            return shared;
        }
    }

    /** Gives back a reference taken by {@link #acquire()}; the last one stops the sampler and deletes the file. */
    public void release()
    {
        synchronized (LOCK)
        {
            if (references <= 0)
            {
                return;
            }
            if (--references > 0)
            {
                return;
            }
            if (shared == this)
            {
                shared = null;
            }
        }
        running = false;
        LockSupport.unpark(sampler);
        if (shutdownHook != null)
        {
            try
            {
                Runtime.getRuntime().removeShutdownHook(shutdownHook);
            }
            catch (final IllegalStateException shuttingDown)
            {
                // The hook runs anyway.
            }
            deleteFile();
        }
        // Not unmapped: a counter still written by a closing thread keeps writing into valid (now unlinked) memory.
    }

    /**
     * @param kind     the group's kind ({@link CountersLayout#KIND_ENGINE}...).
     * @param label    what the counters are of (printed by the tool; truncated to Agrona's label limit).
     * @param parentId the enclosing group's id (an engine's, for a connection or a poller), or 0.
     * @return a new, empty group.
     */
    public CounterGroup newGroup(final int kind, final String label, final long parentId)
    {
        return new CounterGroup(this, kind, groupIds.incrementAndGet(), parentId, label);
    }

    /** @return the file, or null when counters are kept in memory only. */
    public Path file()
    {
        return file;
    }

    /** @return a reader over this process's own counters (no file opened, so no lock disturbed). */
    public LiveProcess view()
    {
        return new LiveProcess(file, header, manager);
    }

    AtomicCounter allocate(final int kind, final long groupId, final long parentId, final String label, final String name)
    {
        if (faulted)
        {
            return null;
        }
        try
        {
            return manager.newCounter(label, kind, key -> CountersLayout.writeKey(key, groupId, parentId, name));
        }
        catch (final InternalError fault)
        {
            onFault(fault);
            return null;
        }
        catch (final IllegalStateException full)
        {
            if (!fullReported)
            {
                fullReported = true;
                LOG.log(Level.WARNING, "Reverb counters file " + file + " is full (" + MAX_PROPERTY + "=" +
                    manager.capacity() + "): further counters are kept in memory only, invisible to reverb-stat");
            }
            return null;
        }
    }

    /**
     * A page of the mapped file faulted (SIGBUS, as an InternalError): the file was truncated or its file system
     * ran out of pages. Reported once; later counters stay in memory.
     */
    void onFault(final Throwable fault)
    {
        if (!faulted)
        {
            faulted = true;
            LOG.log(Level.WARNING, "Reverb counters file " + file + " faulted (" + fault + "): further counters " +
                "are kept in memory only, invisible to reverb-stat");
        }
    }

    void addGauge(final Sampled gauge)
    {
        gauges.add(gauge);
    }

    void removeGauge(final Sampled gauge)
    {
        gauges.remove(gauge);
    }

    private void sampleLoop()
    {
        while (running && !faulted)
        {
            try
            {
                for (final Sampled gauge : gauges)
                {
                    try
                    {
                        gauge.counter.setRelease(gauge.source.getAsLong());
                    }
                    catch (final RuntimeException ignore)
                    {
                        // A gauge of something closing; the next sample or its removal settles it.
                    }
                }
                header.putLongRelease(CountersLayout.HEARTBEAT_OFFSET, System.currentTimeMillis());
            }
            catch (final InternalError fault)
            {
                onFault(fault); // the sampler stops: every page it writes is in the file
                return;
            }
            LockSupport.parkNanos(SAMPLE_PERIOD_MS * 1_000_000L);
        }
    }

    private void writeHeader(final int metadataLength, final int valuesLength)
    {
        final ProcessHandle self = ProcessHandle.current();
        header.putInt(CountersLayout.VERSION_OFFSET, CountersLayout.VERSION);
        header.putLong(CountersLayout.PID_OFFSET, self.pid());
        header.putLong(CountersLayout.START_TIME_OFFSET,
            self.info().startInstant().map(i -> i.toEpochMilli()).orElse(System.currentTimeMillis()));
        header.putLong(CountersLayout.HEARTBEAT_OFFSET, System.currentTimeMillis());
        header.putInt(CountersLayout.METADATA_LENGTH_OFFSET, metadataLength);
        header.putInt(CountersLayout.VALUES_LENGTH_OFFSET, valuesLength);
        final byte[] command = commandLine().getBytes(StandardCharsets.UTF_8);
        final int length = Math.min(command.length, CountersLayout.MAX_COMMAND_LENGTH);
        header.putInt(CountersLayout.COMMAND_LENGTH_OFFSET, length);
        header.putBytes(CountersLayout.COMMAND_OFFSET, command, 0, length);
        header.putIntRelease(CountersLayout.MAGIC_OFFSET, CountersLayout.MAGIC);
    }

    private static String commandLine()
    {
        final String command = System.getProperty("sun.java.command", "");
        return command.isEmpty() ? ProcessHandle.current().info().command().orElse("java") : command;
    }

    private void deleteFile()
    {
        try
        {
            Files.deleteIfExists(file);
            lock.release();
            channel.close();
        }
        catch (final IOException | RuntimeException ignore)
        {
            // Best effort; a reader recognises the file as stale once this process is gone.
        }
    }

    private static ProcessCounters open()
    {
        final int maxCounters = Integer.getInteger(MAX_PROPERTY, DEFAULT_MAX_COUNTERS);
        if (maxCounters < 16 || maxCounters > CountersLayout.MAX_COUNTERS)
        {
            throw new IllegalArgumentException(MAX_PROPERTY + " must be in [16, " + CountersLayout.MAX_COUNTERS +
                "], got " + maxCounters);
        }
        final int length = CountersLayout.HEADER_LENGTH + CountersLayout.metadataLength(maxCounters) +
            CountersLayout.valuesLength(maxCounters);
        if (enabled())
        {
            final Path dir = directory();
            try
            {
                CountersDirectory.ensureDirectory(dir);
                CountersDirectory.deleteStale(dir);
                final String name = CountersLayout.FILE_PREFIX + ProcessHandle.current().pid() + "-" +
                    Long.toHexString(new SecureRandom().nextLong() >>> 1) + CountersLayout.FILE_SUFFIX;
                final Path file = dir.resolve(name);
                // Created under a name readers ignore, locked, written, then renamed: no reader ever sees it unlocked
                // or half-written, and the cleaner takes an unlocked one for a killed writer's only once it is older
                // than CountersDirectory.CREATING_GRACE_MS.
                final Path creating = dir.resolve(name + CountersLayout.CREATING_SUFFIX);
                final FileChannel channel = FileChannel.open(creating, Set.of(StandardOpenOption.CREATE_NEW,
                    StandardOpenOption.READ, StandardOpenOption.WRITE),
                    PosixFilePermissions.asFileAttribute(CountersDirectory.FILE_PERMISSIONS));
                final FileLock lock;
                final MappedByteBuffer mapped;
                try
                {
                    lock = channel.tryLock();
                    if (lock == null)
                    {
                        throw new IOException("another process holds the lock of a new file " + creating);
                    }
                    preallocate(channel, length);
                    mapped = channel.map(FileChannel.MapMode.READ_WRITE, 0, length);
                    Files.move(creating, file, StandardCopyOption.ATOMIC_MOVE);
                }
                catch (final IOException | RuntimeException ex)
                {
                    channel.close();
                    Files.deleteIfExists(creating);
                    throw ex;
                }
                return new ProcessCounters(file, channel, lock, new UnsafeBuffer(mapped), maxCounters);
            }
            catch (final IOException | RuntimeException ex)
            {
                LOG.log(FALLBACK_WARNED.compareAndSet(false, true) ? Level.WARNING : Level.DEBUG,
                    "Reverb counters file not created in " + dir + " (" + ex.getMessage() +
                    "): counters kept in memory only, invisible to reverb-stat. Set " + DIR_PROPERTY +
                    " to a directory of your own, or " + ENABLED_PROPERTY + "=off to silence this.");
            }
        }
        return new ProcessCounters(null, null, null, new UnsafeBuffer(ByteBuffer.allocateDirect(length)), maxCounters);
    }

    /**
     * Writes the file in full: a mapped page of a sparse file is allocated when first touched, and where the file
     * system is full that touch raises SIGBUS (an InternalError wherever the counter is written). Written here, a
     * full file system is an IOException while nothing depends on the file yet.
     */
    static void preallocate(final FileChannel channel, final long length) throws IOException
    {
        final ByteBuffer zeros = ByteBuffer.allocate(64 * 1024);
        long position = 0;
        while (position < length)
        {
            zeros.clear().limit((int)Math.min(zeros.capacity(), length - position));
            position += channel.write(zeros, position);
        }
    }

    /**
     * @return whether Agrona can run in this JVM (it needs {@code --add-exports
     * java.base/jdk.internal.misc=ALL-UNNAMED}); without it a layer that could run without Agrona (rpc-core over its
     * in-process transport) keeps no counters rather than fail.
     */
    public static boolean accessible()
    {
        return Object.class.getModule().isExported("jdk.internal.misc", UnsafeBuffer.class.getModule());
    }

    /** @return whether counters go to a file (the {@code reverb.counters} setting is not {@code off}). */
    public static boolean enabled()
    {
        final String value = setting(ENABLED_PROPERTY, "REVERB_COUNTERS");
        return value == null || !("off".equalsIgnoreCase(value) || "false".equalsIgnoreCase(value));
    }

    /** @return the directory counters files go to (and {@code reverb-stat} reads). */
    public static Path directory()
    {
        final String configured = setting(DIR_PROPERTY, DIR_ENV);
        if (configured != null && !configured.isBlank())
        {
            return Path.of(configured);
        }
        final String user = System.getProperty("user.name", "unknown").replaceAll("[^A-Za-z0-9._-]", "_");
        final Path shm = Path.of("/dev/shm");
        final Path base = Files.isDirectory(shm) && Files.isWritable(shm) ? shm : Path.of(System.getProperty("java.io.tmpdir"));
        return base.resolve("reverb-stat-" + user.toLowerCase(Locale.ROOT));
    }

    private static String setting(final String property, final String env)
    {
        final String value = System.getProperty(property);
        return value != null ? value : System.getenv(env);
    }

    /** A gauge and where its value comes from. */
    static final class Sampled
    {
        final AtomicCounter counter;
        final LongSupplier source;

        Sampled(final AtomicCounter counter, final LongSupplier source)
        {
            this.counter = counter;
            this.source = source;
        }
    }
}
