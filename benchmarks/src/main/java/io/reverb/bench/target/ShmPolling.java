package io.reverb.bench.target;

import io.reverb.rdma.engine.EngineConfig;
import io.reverb.rdma.engine.PollingMode;

import java.lang.reflect.Field;
import java.net.URI;

/**
 * Sets the completion polling mode of the {@code shm://} transport in this JVM.
 *
 * <p>Stopgap for transports that do not read {@code polling=MODE} from the URI (checked by
 * {@link #transportReadsUri()}; once they do, this class does nothing): rdma-transport's first
 * {@code ShmTransportProvider} opened one connection engine per JVM with {@link EngineConfig}
 * defaults (ADAPTIVE) and took no polling setting. For it, the benchmarks install the engine configuration
 * before the engine is first opened, through the provider's private {@code config} field. So a
 * JVM runs one polling mode: the first one asked for. Asking for another once the engine is open
 * fails with a message instead of measuring the wrong mode. The URI still carries
 * {@code polling=MODE}, for when the transport reads it.
 */
public final class ShmPolling
{
    private static final String PROVIDER = "io.reverb.rdma.rpc.ShmTransportProvider";
    private static String applied;

    private ShmPolling()
    {
    }

    /**
     * @return true if the shm transport takes {@code polling=MODE} from the URI itself (an engine
     * per mode), so that nothing needs installing.
     */
    public static boolean transportReadsUri()
    {
        try
        {
            Class.forName(PROVIDER).getDeclaredMethod("pollingMode", URI.class);
            return true;
        }
        catch (final ReflectiveOperationException ex)
        {
            return false;
        }
    }

    /**
     * @param mode {@code BUSY}, {@code EVENT} or {@code ADAPTIVE}.
     * @return true if this JVM's shm engine runs, or can still be set to, that mode.
     */
    public static synchronized boolean canApply(final String mode)
    {
        if (transportReadsUri())
        {
            return true;
        }
        try
        {
            apply(mode);
            return true;
        }
        catch (final IllegalStateException ex)
        {
            return false;
        }
    }

    /**
     * @param mode {@code BUSY}, {@code EVENT} or {@code ADAPTIVE}.
     * @throws IllegalStateException if this JVM's shm engine already runs another mode, or the
     *                               transport's configuration cannot be reached.
     */
    public static synchronized void apply(final String mode)
    {
        final PollingMode wanted = PollingMode.valueOf(mode);
        if (transportReadsUri())
        {
            return;
        }
        try
        {
            final Class<?> provider = Class.forName(PROVIDER);
            final Field engine = provider.getDeclaredField("engine");
            final Field config = provider.getDeclaredField("config");
            engine.setAccessible(true);
            config.setAccessible(true);
            final EngineConfig current = (EngineConfig)config.get(null);
            if (engine.get(null) != null || applied != null)
            {
                final PollingMode running = current == null ? PollingMode.ADAPTIVE : current.pollingMode();
                if (running != wanted)
                {
                    throw new IllegalStateException("the shm:// engine of this JVM already runs " + running +
                        " polling; the transport sets one mode per JVM, so run " + wanted + " in another process");
                }
                return;
            }
            config.set(null, new EngineConfig().name("reverb-shm").pollingMode(wanted).conclude());
            applied = mode;
        }
        catch (final ReflectiveOperationException | ClassCastException ex)
        {
            throw new IllegalStateException("cannot set the shm:// polling mode with this rdma-transport (" + ex +
                "); run without --polling", ex);
        }
    }
}
