package io.reverb.rdma.rpc;

import io.reverb.common.ClaimResult;
import io.reverb.common.LogLimiter;
import io.reverb.common.WriteClaim;
import io.reverb.rdma.engine.EngineConfig;
import io.reverb.rdma.verbs.TlsConfig;
import io.reverb.rdma.verbs.VerbsConfig;
import io.reverb.rpc.transport.Connection;
import io.reverb.rpc.transport.ConnectionHandler;
import io.reverb.rpc.transport.ResourceUsage;
import io.reverb.rpc.transport.ServerListener;
import io.reverb.rpc.transport.TransportOptions;
import io.reverb.rpc.transport.TransportProvider;
import java.io.IOException;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.BiConsumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * rpc-core's transport for {@code reverb://host:port}: one address for every placement, which picks the best fabric
 * that both sides have.
 *
 * <p><b>Server.</b> {@code RpcServer.builder("reverb://0.0.0.0:7000")} listens on {@code tcp://} at that port always,
 * on {@code shm://reverb-<port>-<random>} when it can create its shm directory, and on {@code rdma://} at that
 * address when the rdma fabric is available here (the DiSNi artifact, an RDMA device, libdisni); all three feed the
 * one server. A plain {@code tcp://host:7000} or {@code shm://} client can connect to it as to any server.
 *
 * <p><b>Client.</b> {@code RpcChannel.builder("reverb://host:7000")} (or a {@code dns:///} target, or a resolver
 * that yields {@code reverb://} addresses) connects over tcp, and after the engine handshake (its token
 * authentication, TLS if configured) asks for the server's offer ({@link FabricMessages}): its shm name, its host
 * identity (boot id, shm directory device and inode) and secret file, its rdma address. It then moves to
 * <ul>
 *   <li><b>shm</b> when it runs on the same kernel (boot id), uses the same shm directory (device and inode, whatever
 *       the path: two containers with a /dev/shm each differ), that directory is private to this user (mode 0700),
 *       and it can read the server's secret file there: it connects to the shm name and proves it read the file,
 *       for the ticket the offer gave; the server proves it in return;</li>
 *   <li><b>rdma</b> when the rdma fabric is available here and the server's rdma address is on a subnet of one of
 *       this host's addresses;</li>
 *   <li>else it stays on <b>tcp</b>.</li>
 * </ul>
 * An upgrade that fails (a refusal, a connection that fails, a proof that does not verify, no answer within
 * {@link #NEGOTIATION_TIMEOUT_MILLIS} ms) leaves the connection on tcp and says why in one log line (rate-limited:
 * {@link LogLimiter}); it never fails a call. The RPC layer above (channel, balancer, subchannels) sees one connection
 * that is already on its fabric, and {@code Connection.fabric()} / {@code RpcChannel.fabric()} say which.
 *
 * <p><b>Trust.</b> The offer comes over the tcp connection after its handshake; with a token it carries the server's
 * HMAC over this client's fresh nonce, so nobody without the token can make or change it. The shm connection is
 * authenticated by the engine handshake with the same token, and bound to the offer by its one-use ticket and by the
 * secret file, which only a process of the directory's user can have read; a client accepts an offer only into its own
 * private shm directory, so a peer on the tcp port that is not this user cannot point it at a shm name of its
 * choosing. An rdma upgrade is authenticated by the engine token (with none, by the ticket only, as plain tcp is).
 * Every claim is bound to the tcp connection its offer came over (both sockets' addresses, under the claim's proof),
 * so an offer relayed by whoever answers at the dialled address fails. With TLS, the server's shm and rdma listeners
 * admit only such claims, a server offers rdma (no encryption) only with {@code TlsConfig.allowPlaintextRdma}, and a
 * client moves to rdma only with the same option. Without a token the tcp connection itself is unauthenticated, and
 * so is the offer. See {@link FabricMessages} for what is checked of a peer's messages.
 *
 * <p>Settings: {@code EngineOptions.of(config)} serves every fabric (one shared engine per fabric for that config); an
 * engine of the caller's ({@code EngineOptions.of(engine)}) runs one fabric only and is refused here. The address's
 * {@code ?polling=} and {@code ?directWrite=} apply to every fabric.
 */
public final class ReverbTransportProvider implements TransportProvider
{
    /** The scheme. */
    public static final String SCHEME = "reverb";
    /** How long the client waits for each step of the negotiation (offer, claim answer) before it stays on tcp. */
    public static final long NEGOTIATION_TIMEOUT_MILLIS = 5_000;
    private static final Logger LOG = LoggerFactory.getLogger(ReverbTransportProvider.class);

    final EngineTransport tcp = new EngineTransport("tcp");
    final EngineTransport shm = new EngineTransport("shm");
    final EngineTransport rdma = new EngineTransport("rdma");
    final Set<ReverbListener> listeners = ConcurrentHashMap.newKeySet();
    private volatile BiConsumer<String, Throwable> logSink = (line, stack) -> LOG.warn(line, stack);
    private final LogLimiter logLimiter = new LogLimiter((line, stack) -> logSink.accept(line, stack));

    /** ServiceLoader's constructor: a provider with engines of its own ({@code Transports} loads one per JVM). */
    public ReverbTransportProvider()
    {
    }

    @Override
    public String scheme()
    {
        return SCHEME;
    }

    @Override
    public boolean isAvailable()
    {
        return unavailabilityCause() == null;
    }

    @Override
    public String unavailabilityCause()
    {
        return tcp.unavailabilityCause();
    }

    @Override
    public CompletableFuture<Connection> connect(final URI uri, final ConnectionHandler handler)
    {
        return connect(uri, TransportOptions.EMPTY, handler);
    }

    @Override
    public CompletableFuture<Connection> connect(final URI uri, final TransportOptions options,
        final ConnectionHandler handler)
    {
        final URI tcpUri;
        try
        {
            checkOptions(options);
            tcpUri = sibling(uri, "tcp", authority(uri));
        }
        catch (final IllegalArgumentException ex)
        {
            return CompletableFuture.failedFuture(new IOException(ex.getMessage(), ex));
        }
        return new ReverbConnect(this, uri, tcpUri, options, handler).start();
    }

    @Override
    public ServerListener listen(final URI uri, final ServerListener.Acceptor acceptor) throws IOException
    {
        return listen(uri, TransportOptions.EMPTY, acceptor);
    }

    @Override
    public ServerListener listen(final URI uri, final TransportOptions options, final ServerListener.Acceptor acceptor)
        throws IOException
    {
        checkOptions(options);
        authority(uri);
        return ReverbListener.open(this, uri, options, acceptor);
    }

    @Override
    public ResourceUsage resourceUsage()
    {
        final ResourceUsage[] all = {tcp.resourceUsage(), shm.resourceUsage(), rdma.resourceUsage()};
        return new ResourceUsage()
        {
            @Override
            public long buffersInUse()
            {
                long sum = 0;
                for (final ResourceUsage usage : all)
                {
                    sum += usage.buffersInUse();
                }
                return sum;
            }

            @Override
            public long bytesInUse()
            {
                long sum = 0;
                for (final ResourceUsage usage : all)
                {
                    sum += usage.bytesInUse();
                }
                return sum;
            }
        };
    }

    /** Test seam: where the fallback and offer lines go (the default: this class's slf4j logger, WARN). */
    void logSink(final BiConsumer<String, Throwable> sink)
    {
        this.logSink = sink;
    }

    /** One rate-limited line: a key per kind and address, so that a reconnect loop does not repeat it without bound. */
    void log(final String key, final String line)
    {
        logLimiter.log(key, line, null);
    }

    private static void checkOptions(final TransportOptions options)
    {
        if (options.get(EngineOptions.ENGINE) != null)
        {
            throw new IllegalArgumentException("reverb:// runs an engine per fabric (tcp, shm, rdma), but the transport " +
                "options name one engine of one fabric (EngineOptions.of(engine)); give its settings with " +
                "EngineOptions.of(config) instead");
        }
    }

    private static String authority(final URI uri)
    {
        final String authority = uri.getAuthority();
        if (authority == null || authority.isEmpty() || uri.getPort() < 0)
        {
            throw new IllegalArgumentException("reverb address needs host:port (reverb://host:port), got " + uri);
        }
        return authority;
    }

    /** @return the address on another fabric, with the same query (its ?polling= and ?directWrite= overrides). */
    static URI sibling(final URI uri, final String scheme, final String authority)
    {
        try
        {
            return new URI(scheme + "://" + authority + (uri.getRawQuery() == null ? "" : "?" + uri.getRawQuery()));
        }
        catch (final URISyntaxException ex)
        {
            throw new IllegalArgumentException("cannot form the " + scheme + ":// address of " + uri + ": " +
                ex.getMessage(), ex);
        }
    }

    /** @return the shm directory the options' engines use. */
    static Path shmDirectory(final TransportOptions options)
    {
        final EngineConfig config = options.get(EngineOptions.ENGINE_CONFIG);
        return config != null && config.verbsConfig() != null ? config.verbsConfig().shmDirectory() :
            VerbsConfig.defaults().shmDirectory();
    }

    /** @return the TLS settings of the options' engine settings, or null (no TLS on tcp). */
    static TlsConfig tls(final TransportOptions options)
    {
        final EngineConfig config = options.get(EngineOptions.ENGINE_CONFIG);
        return config == null ? null : config.tls();
    }

    /** @return the token of the options' engine settings, or null. */
    static byte[] token(final TransportOptions options)
    {
        final EngineConfig config = options.get(EngineOptions.ENGINE_CONFIG);
        return config == null ? null : config.authToken();
    }

    /**
     * Sends one negotiation message; these are the first messages of a fresh connection, so the send ring has room.
     *
     * @return true if it was committed.
     */
    static boolean send(final Connection connection, final ByteBuffer message)
    {
        final WriteClaim claim = new WriteClaim();
        if (connection.tryClaim(message.remaining(), claim) != ClaimResult.OK)
        {
            return false;
        }
        final ByteBuffer target = claim.buffer();
        target.position(claim.offset());
        target.put(message.duplicate());
        return claim.commit() == ClaimResult.OK;
    }
}
