package io.reverb.rdma.rpc;

import io.reverb.rdma.engine.EngineConfig;
import io.reverb.rdma.engine.PollingMode;
import io.reverb.rdma.engine.RdmaEngine;
import io.reverb.rpc.protobuf.ProtoMarshaller;
import java.io.IOException;
import java.util.HashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * The engines one scheme's transport shares among the servers and channels of a provider (one provider per scheme and
 * JVM, as {@code Transports} loads it): one engine per distinct settings and address overrides, opened by its first
 * user, reference counted, and closed when its last user lets go. A user holds a {@link Lease}: a listener until it is
 * closed, a connection until it is closed (so a server's accepted connections keep their engine through a graceful
 * shutdown after its listener closed). Sharing is what keeps one set of poller threads per settings however many
 * channels use them; nothing here is configured globally.
 *
 * <p>The settings are the builder's {@link EngineOptions} config (compared by identity: reuse one {@link EngineConfig}
 * object for channels that should share an engine), or the scheme's defaults without one; the overrides are the
 * address's {@code ?polling=} and {@code ?directWrite=}, which change only those fields of a copy of the settings.
 * An engine the caller opened itself ({@link EngineOptions#of(RdmaEngine)}) is never shared or closed here.
 *
 * <p>The last release closes the engine on a thread of its own ({@code <engine name>-close}): a release may come from
 * a connection's close callback on one of the engine's pollers, which cannot wait for itself to stop. A new user of
 * the same settings meanwhile gets a new engine.
 */
final class SharedEngines
{
    private final String scheme;
    // guarded by this
    private final Map<Key, Shared> engines = new HashMap<>();

    /**
     * What an engine was opened from: the options' config (null: the scheme's defaults), a polling override and a
     * direct-write override (null: none).
     */
    private record Key(EngineConfig base, PollingMode polling, Boolean directWrite)
    {
        @Override
        public boolean equals(final Object other)
        {
            return other instanceof Key && ((Key)other).base == base && ((Key)other).polling == polling &&
                Objects.equals(((Key)other).directWrite, directWrite);
        }

        @Override
        public int hashCode()
        {
            return 31 * (31 * System.identityHashCode(base) + (polling == null ? 0 : polling.hashCode())) +
                Objects.hashCode(directWrite);
        }
    }

    /** One shared engine and its users (guarded by the registry). */
    private static final class Shared
    {
        final Key key;
        final RdmaEngine engine;
        int users;
        boolean closed;

        Shared(final Key key, final RdmaEngine engine)
        {
            this.key = key;
            this.engine = engine;
        }
    }

    /**
     * One use of an engine: shared (released once, the last release closes the engine) or the caller's own (never
     * closed here).
     */
    final class Lease
    {
        private final RdmaEngine engine;
        private final Shared shared;
        private final AtomicBoolean released = new AtomicBoolean();

        private Lease(final RdmaEngine engine, final Shared shared)
        {
            this.engine = engine;
            this.shared = shared;
        }

        /** @return the engine, open until this lease and every other of it are released. */
        RdmaEngine engine()
        {
            return engine;
        }

        /** @return a new lease on the same engine, for another user (an accepted connection). */
        Lease retain()
        {
            if (shared != null)
            {
                synchronized (SharedEngines.this)
                {
                    shared.users++;
                }
            }
            return new Lease(engine, shared);
        }

        /** Ends this use; idempotent. The last release of a shared engine closes it. */
        void release()
        {
            if (shared != null && released.compareAndSet(false, true))
            {
                SharedEngines.this.release(shared);
            }
        }
    }

    SharedEngines(final String scheme)
    {
        this.scheme = scheme;
    }

    /**
     * @param engine an engine the caller opened and closes.
     * @return a lease that never closes it.
     */
    Lease own(final RdmaEngine engine)
    {
        return new Lease(engine, null);
    }

    /**
     * @param base        the options' config, or null for the scheme's defaults.
     * @param polling     the address's polling override, or null.
     * @param directWrite the address's direct-write override, or null.
     * @return a lease on the engine for them, opened now if none is.
     * @throws IOException if it cannot be opened.
     */
    synchronized Lease acquire(final EngineConfig base, final PollingMode polling, final Boolean directWrite)
        throws IOException
    {
        final Key key = new Key(base, polling, directWrite);
        Shared shared = engines.get(key);
        if (shared == null)
        {
            final EngineConfig config = (base != null ? base : new EngineConfig().name("reverb-" + scheme)).copy();
            if (polling != null)
            {
                config.pollingMode(polling).name(config.name() + "-" + polling.name().toLowerCase(Locale.ROOT));
            }
            if (directWrite != null)
            {
                config.directWrite(directWrite).name(config.name() + (directWrite ? "-direct" : "-copying"));
            }
            if (config.idleTask() == null)
            {
                // the default marshaller's large-message arrays, allocated while the pollers wait (new arrays, never
                // reused: see ProtoMarshaller.prepareIdle)
                config.idleTask(ProtoMarshaller::prepareIdle);
            }
            shared = new Shared(key, RdmaEngine.open(scheme, config));
            engines.put(key, shared);
        }
        shared.users++;
        return new Lease(shared.engine, shared);
    }

    /**
     * @return the engine open for these settings now, or null (tests: its counters, while its users hold it).
     */
    synchronized RdmaEngine peek(final EngineConfig base, final PollingMode polling, final Boolean directWrite)
    {
        final Shared shared = engines.get(new Key(base, polling, directWrite));
        return shared == null ? null : shared.engine;
    }

    /** @return engines open now (tests: every engine is closed once its users are). */
    synchronized int openEngines()
    {
        return engines.size();
    }

    private void release(final Shared shared)
    {
        synchronized (this)
        {
            if (shared.closed || --shared.users > 0)
            {
                return;
            }
            shared.closed = true;
            engines.remove(shared.key, shared);
        }
        final Thread closer = new Thread(shared.engine::close, shared.engine.config().name() + "-close");
        closer.setDaemon(true);
        closer.start();
    }
}
