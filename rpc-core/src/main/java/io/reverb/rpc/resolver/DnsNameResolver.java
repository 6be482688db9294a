package io.reverb.rpc.resolver;

import io.reverb.rpc.Status;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.URI;
import java.net.UnknownHostException;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import reactor.core.Disposable;

/**
 * {@code dns:///host:port[?transport=tcp|rdma|reverb&...]}: the host's A/AAAA records, each as a transport address
 * {@code tcp://ip:port} (default), {@code rdma://ip:port} or {@code reverb://ip:port} (the best fabric both sides
 * have: see the {@code reverb} transport). Other query parameters (engine settings) are copied to
 * every address. An authority ({@code dns://8.8.8.8/host:port}) is accepted and ignored: lookups go through the
 * JVM's resolver (and its cache, {@code networkaddress.cache.ttl}).
 *
 * <p>Resolves when started (on {@link Args#scheduler()}, never on the caller's thread), then every {@link Args#refreshInterval()}, and on {@link #refresh()} (after a
 * connection failed) no sooner than {@link Args#minRefreshInterval()} after the previous resolution. A failed
 * lookup is reported to the listener and retried with a doubling delay, from the minimum interval up to the
 * refresh interval; addresses already delivered stay in use meanwhile.
 */
public final class DnsNameResolver implements NameResolver
{
    /** Looks host names up; replaceable in tests. */
    @FunctionalInterface
    public interface HostLookup
    {
        /** The JVM's resolver. */
        HostLookup SYSTEM = InetAddress::getAllByName;

        /**
         * @param host a host name or literal address.
         * @return its addresses, at least one.
         * @throws UnknownHostException if it has none.
         */
        InetAddress[] lookup(String host) throws UnknownHostException;
    }

    private final URI target;
    private final String host;
    private final int port;
    private final String transport;
    private final String extraQuery;
    private final Args args;
    private final HostLookup lookup;
    private final long minIntervalNanos;
    private final long refreshIntervalNanos;

    // guarded by this
    private Listener listener;
    private boolean shutdown;
    private boolean resolving;
    private boolean pendingScheduled;
    private long lastResolutionNanos;
    private long retryDelayNanos;
    private Disposable periodic;
    private Disposable pending;
    private List<URI> lastAddresses;

    /**
     * @param target the target.
     * @param args   the channel's settings.
     * @param lookup the host lookup.
     * @throws IllegalArgumentException if the target is malformed, saying how.
     */
    public DnsNameResolver(final URI target, final Args args, final HostLookup lookup)
    {
        this.target = Objects.requireNonNull(target, "target");
        this.args = Objects.requireNonNull(args, "args");
        this.lookup = Objects.requireNonNull(lookup, "lookup");
        final String path = target.getPath();
        if (path == null || path.length() < 2 || path.charAt(0) != '/')
        {
            throw new IllegalArgumentException(usage(target, "no host"));
        }
        final URI hostPort = URI.create("//" + path.substring(1));
        if (hostPort.getHost() == null || hostPort.getPort() < 0)
        {
            throw new IllegalArgumentException(usage(target, "expected host:port after dns:///"));
        }
        this.host = hostPort.getHost();
        this.port = hostPort.getPort();
        String chosen = "tcp";
        final StringBuilder rest = new StringBuilder();
        final String query = target.getRawQuery();
        if (query != null)
        {
            for (final String param : query.split("&"))
            {
                if (param.startsWith("transport="))
                {
                    chosen = param.substring("transport=".length()).toLowerCase(Locale.ROOT);
                    if (!chosen.equals("tcp") && !chosen.equals("rdma") && !chosen.equals("reverb"))
                    {
                        throw new IllegalArgumentException(usage(target, "transport must be tcp, rdma or reverb, not '" +
                            chosen + "'"));
                    }
                }
                else if (!param.isEmpty())
                {
                    rest.append(rest.length() == 0 ? "" : "&").append(param);
                }
            }
        }
        this.transport = chosen;
        this.extraQuery = rest.length() == 0 ? null : rest.toString();
        this.minIntervalNanos = args.minRefreshInterval().toNanos();
        this.refreshIntervalNanos = args.refreshInterval().toNanos();
        this.retryDelayNanos = minIntervalNanos;
    }

    private static String usage(final URI target, final String problem)
    {
        return "invalid DNS target '" + target + "': " + problem +
            "; expected dns:///host:port or dns:///host:port?transport=rdma (or reverb)";
    }

    /**
     * @return the host looked up.
     */
    public String host()
    {
        return host;
    }

    /**
     * @return the port of every address.
     */
    public int port()
    {
        return port;
    }

    /**
     * @return the scheme of every address, {@code tcp} or {@code rdma}.
     */
    public String transport()
    {
        return transport;
    }

    @Override
    public void start(final Listener listener)
    {
        synchronized (this)
        {
            if (this.listener != null)
            {
                throw new IllegalStateException("already started");
            }
            this.listener = Objects.requireNonNull(listener, "listener");
            periodic = args.scheduler().schedulePeriodically(this::resolveNow, refreshIntervalNanos, refreshIntervalNanos,
                TimeUnit.NANOSECONDS);
        }
        // the first lookup too runs on the resolver's scheduler (as grpc-java's): a slow or failing DNS server must not
        // hold RpcChannel.Builder.build(), which may run on an event loop
        try
        {
            args.scheduler().schedule(this::resolveNow);
        }
        catch (final RejectedExecutionException stopped)
        {
            resolveNow();
        }
    }

    @Override
    public void refresh()
    {
        final long delay;
        synchronized (this)
        {
            if (shutdown || listener == null || resolving || pendingScheduled)
            {
                return; // a resolution is running or due: this request joins it
            }
            delay = Math.max(0, lastResolutionNanos + minIntervalNanos - now());
            pendingScheduled = true;
            pending = args.scheduler().schedule(this::resolvePending, delay, TimeUnit.NANOSECONDS);
        }
    }

    @Override
    public void shutdown()
    {
        synchronized (this)
        {
            shutdown = true;
            if (periodic != null)
            {
                periodic.dispose();
            }
            if (pending != null)
            {
                pending.dispose();
            }
        }
    }

    private long now()
    {
        return args.scheduler().now(TimeUnit.NANOSECONDS);
    }

    private void resolvePending()
    {
        synchronized (this)
        {
            pendingScheduled = false;
        }
        resolveNow();
    }

    private void resolveNow()
    {
        final Listener target;
        synchronized (this)
        {
            if (shutdown || resolving)
            {
                return;
            }
            resolving = true;
            lastResolutionNanos = now();
            target = listener;
        }
        List<URI> addresses = null;
        Status error = null;
        try
        {
            addresses = toAddresses(lookup.lookup(host));
        }
        catch (final UnknownHostException | RuntimeException e)
        {
            error = Status.UNAVAILABLE.withDescription("DNS resolution of '" + host + "' for " + this.target +
                " failed: " + e).withCause(e);
        }
        final boolean deliver;
        synchronized (this)
        {
            deliver = !shutdown;
            if (error == null)
            {
                lastAddresses = addresses;
            }
        }
        try
        {
            // still marked resolving: no other resolution can start, so deliveries never overlap nor reorder
            if (deliver && error != null)
            {
                target.onError(error);
            }
            else if (deliver)
            {
                target.onAddresses(addresses);
            }
        }
        finally
        {
            synchronized (this)
            {
                resolving = false;
                if (error == null)
                {
                    retryDelayNanos = minIntervalNanos;
                }
                else if (!shutdown && !pendingScheduled)
                {
                    // retry with a doubling delay; the periodic refresh bounds it from above
                    pendingScheduled = true;
                    pending = args.scheduler().schedule(this::resolvePending, retryDelayNanos, TimeUnit.NANOSECONDS);
                    retryDelayNanos = Math.min(Math.max(1, retryDelayNanos * 2), refreshIntervalNanos);
                }
            }
        }
    }

    /**
     * @return the addresses of the last successful resolution, or null.
     */
    public synchronized List<URI> lastAddresses()
    {
        return lastAddresses;
    }

    private List<URI> toAddresses(final InetAddress[] found)
    {
        final LinkedHashSet<URI> unique = new LinkedHashSet<>();
        for (final InetAddress address : found)
        {
            final String literal = address.getHostAddress();
            final String hostPart = address instanceof Inet6Address ? "[" + stripScope(literal) + "]" : literal;
            unique.add(URI.create(transport + "://" + hostPart + ":" + port + (extraQuery == null ? "" : "?" + extraQuery)));
        }
        return List.copyOf(new ArrayList<>(unique));
    }

    private static String stripScope(final String literal)
    {
        final int percent = literal.indexOf('%');
        return percent < 0 ? literal : literal.substring(0, percent);
    }

    @Override
    public String toString()
    {
        return "DnsNameResolver{" + target + "}";
    }

    /** The {@code dns} scheme. */
    public static final class Provider implements NameResolverProvider
    {
        @Override
        public String scheme()
        {
            return "dns";
        }

        @Override
        public NameResolver newNameResolver(final URI target, final Args args)
        {
            return new DnsNameResolver(target, args, HostLookup.SYSTEM);
        }
    }
}
