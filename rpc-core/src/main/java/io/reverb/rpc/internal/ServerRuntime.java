package io.reverb.rpc.internal;

import io.reverb.rpc.RpcServer;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

/**
 * Placeholder: the server runtime is being built.
 */
public final class ServerRuntime
{
    private final RpcServer.Builder config;

    public ServerRuntime(final RpcServer.Builder config)
    {
        this.config = config;
    }

    public void start()
    {
        throw new UnsupportedOperationException("server runtime not yet implemented");
    }

    public int port()
    {
        return -1;
    }

    public String address()
    {
        return config.uri;
    }

    public Duration gracePeriod()
    {
        return config.shutdownGracePeriod;
    }

    public void shutdown(final Duration gracePeriod)
    {
    }

    public boolean awaitTermination(final long timeout, final TimeUnit unit)
    {
        return true;
    }

    public boolean isShutdown()
    {
        return false;
    }

    public boolean isTerminated()
    {
        return false;
    }

    public void close()
    {
    }
}
