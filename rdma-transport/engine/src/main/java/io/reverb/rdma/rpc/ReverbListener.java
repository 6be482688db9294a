package io.reverb.rdma.rpc;

import io.reverb.rpc.transport.Connection;
import io.reverb.rpc.transport.ConnectionHandler;
import io.reverb.rpc.transport.ServerListener;
import io.reverb.rpc.transport.TransportOptions;
import java.io.IOException;
import java.net.InetAddress;
import java.net.URI;
import java.nio.ByteBuffer;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.Iterator;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * The server side of {@code reverb://}: a tcp listener always, a shm listener and an rdma listener when this host can
 * offer them, one acceptor (the server's) behind all three.
 *
 * <p>A tcp connection whose first message is a HELLO gets the offer ({@link FabricMessages}) with a fresh one-use
 * ticket; any other first message is an RPC frame of a plain {@code tcp://} client, and the connection goes to the
 * server's acceptor with it. A shm or rdma connection whose first message is a CLAIM of a live ticket with a valid
 * proof is answered CLAIMED and then goes to the acceptor; a claim that does not hold is answered REFUSED and closed;
 * any other first message is a plain {@code shm://} or {@code rdma://} client's. So the acceptor sees a connection
 * only with its first RPC message, never the negotiation, and a client that upgrades leaves no trace in the server
 * but a tcp connection that closed before its first call.
 *
 * <p>Tickets live {@link #TICKET_LIFETIME_NANOS} and at most {@link #MAX_TICKETS} at once (beyond that an offer names
 * tcp only, and the client stays there): a peer cannot grow the table.
 */
final class ReverbListener implements ServerListener
{
    static final long TICKET_LIFETIME_NANOS = TimeUnit.SECONDS.toNanos(30);
    static final int MAX_TICKETS = 4096;
    /** Name of the secret file in the shm directory, before the shm name. */
    static final String SECRET_PREFIX = "fabric-";
    static final String SECRET_SUFFIX = ".key";

    private final ReverbTransportProvider provider;
    private final ServerListener.Acceptor acceptor;
    private final byte[] token;
    private final Map<String, Long> tickets = new ConcurrentHashMap<>();
    private final Set<Connection> negotiating = ConcurrentHashMap.newKeySet();
    private volatile boolean refuseClaims;
    private volatile boolean closed;
    private ServerListener tcpListener;
    private ServerListener shmListener;
    private ServerListener rdmaListener;
    private FabricMessages.Offer template;
    private Path secretFile;
    private byte[] secret;
    private String address;

    private ReverbListener(final ReverbTransportProvider provider, final TransportOptions options,
        final ServerListener.Acceptor acceptor)
    {
        this.provider = provider;
        this.acceptor = acceptor;
        this.token = ReverbTransportProvider.token(options);
    }

    static ReverbListener open(final ReverbTransportProvider provider, final URI uri, final TransportOptions options,
        final ServerListener.Acceptor acceptor) throws IOException
    {
        final ReverbListener listener = new ReverbListener(provider, options, acceptor);
        listener.tcpListener = provider.tcp.listen(ReverbTransportProvider.sibling(uri, "tcp", uri.getAuthority()), options,
            listener::onTcpConnection);
        final int port = listener.tcpListener.port();
        final String host = uri.getHost();
        listener.address = "reverb://" + (host.indexOf(':') >= 0 && !host.startsWith("[") ? "[" + host + "]" : host) +
            ":" + port;
        listener.template = new FabricMessages.Offer();
        listener.openShm(uri, options, port);
        listener.openRdma(uri, options, port);
        provider.listeners.add(listener);
        return listener;
    }

    private void openShm(final URI uri, final TransportOptions options, final int port)
    {
        final String name = "reverb-" + port + "-" + HexFormat.of().formatHex(FabricMessages.random(6));
        try
        {
            template.bootId = HostIdentity.bootId(HostIdentity.BOOT_ID);
            shmListener = provider.shm.listen(ReverbTransportProvider.sibling(uri, "shm", name), options,
                connection -> onUpgradeConnection(connection, true));
            final Path dir = ReverbTransportProvider.shmDirectory(options);
            final long[] key = HostIdentity.deviceAndInode(dir);
            secret = FabricMessages.random(FabricMessages.SECRET_LENGTH);
            secretFile = dir.resolve(SECRET_PREFIX + name + SECRET_SUFFIX);
            HostIdentity.writeSecret(secretFile, secret);
            template.shmDevice = key[0];
            template.shmInode = key[1];
            template.shmName = name;
            template.secretFile = secretFile.getFileName().toString();
            template.fabrics |= FabricMessages.FABRIC_SHM;
            deleteStaleSecrets(dir);
        }
        catch (final IOException | RuntimeException ex)
        {
            provider.log("listen-shm", address + " does not offer shm (clients on this host stay on tcp): " + ex.getMessage());
            closeShm();
        }
    }

    private void openRdma(final URI uri, final TransportOptions options, final int port)
    {
        if (provider.rdma.unavailabilityCause() != null)
        {
            return; // no RDMA device or no DiSNi here: nothing to offer, and nothing worth a line
        }
        try
        {
            // A port of its own: the DiSNi provider's handshake takes a TCP port too, the tcp listener's is taken. On a
            // wildcard the DiSNi listener binds rdma_cm to the device's address and reports that one.
            rdmaListener = provider.rdma.listen(ReverbTransportProvider.sibling(uri, "rdma", uri.getHost() + ":0"),
                options, connection -> onUpgradeConnection(connection, false));
            final String bound = rdmaListener.address();
            final String hostPort = bound.substring(bound.indexOf("://") + 3);
            final URI parsed = URI.create("rdma://" + hostPort);
            final InetAddress advertised = InetAddress.getByName(parsed.getHost());
            if (advertised.isAnyLocalAddress())
            {
                throw new IOException("the rdma listener reports the wildcard address " + hostPort + ", which names " +
                    "no RDMA device to clients; give the address of the device's interface (reverb://10.0.0.5:" + port + ")");
            }
            template.rdmaAddress = hostPort;
            template.rdmaPrefix = RdmaChoice.prefixLength(advertised);
            template.rdmaDevice = "";
            template.fabrics |= FabricMessages.FABRIC_RDMA;
        }
        catch (final IOException | RuntimeException ex)
        {
            provider.log("listen-rdma", address + " does not offer rdma: " + ex.getMessage());
            if (rdmaListener != null)
            {
                rdmaListener.close();
                rdmaListener = null;
            }
        }
    }

    /**
     * Deletes the secret files of servers that died without closing: a secret file whose shm listener's socket is
     * gone (the shm fabric deletes a dead listener's socket). A live server's socket exists before its secret file.
     */
    private void deleteStaleSecrets(final Path dir)
    {
        try (DirectoryStream<Path> secrets = Files.newDirectoryStream(dir, SECRET_PREFIX + "*" + SECRET_SUFFIX))
        {
            for (final Path file : secrets)
            {
                final String fileName = file.getFileName().toString();
                final String name = fileName.substring(SECRET_PREFIX.length(), fileName.length() - SECRET_SUFFIX.length());
                if (!Files.exists(dir.resolve(name + ".sock"), LinkOption.NOFOLLOW_LINKS))
                {
                    Files.deleteIfExists(file);
                }
            }
        }
        catch (final IOException ex)
        {
            provider.log("secret", "cannot clean up stale secret files in " + dir + ": " + ex.getMessage());
        }
    }

    /** @return the fabrics offered: bits of {@link FabricMessages#FABRIC_SHM} and {@link FabricMessages#FABRIC_RDMA}. */
    int fabrics()
    {
        return template.fabrics;
    }

    /** @return the shm listener's address, or null if shm is not offered. */
    String shmAddress()
    {
        return shmListener == null ? null : shmListener.address();
    }

    /** @return the secret file, or null if shm is not offered. */
    Path secretFile()
    {
        return secretFile;
    }

    /** Test seam: refuse every claim from now on (the upgrade fails after the client connected the new fabric). */
    void refuseClaims(final boolean refuse)
    {
        this.refuseClaims = refuse;
    }

    private ConnectionHandler onTcpConnection(final Connection connection)
    {
        if (closed)
        {
            return null;
        }
        negotiating.add(connection);
        return new Gate(connection)
        {
            @Override
            void first(final ByteBuffer message)
            {
                if (FabricMessages.type(message) != FabricMessages.HELLO)
                {
                    deliver(message);
                    return;
                }
                final byte[] nonce = FabricMessages.helloNonce(message);
                if (nonce == null)
                {
                    refuse("malformed fabric request");
                    return;
                }
                if (!ReverbTransportProvider.send(connection, FabricMessages.offer(newOffer(), nonce, token)))
                {
                    connection.close();
                }
            }
        };
    }

    private ConnectionHandler onUpgradeConnection(final Connection connection, final boolean shm)
    {
        if (closed)
        {
            return null;
        }
        negotiating.add(connection);
        return new Gate(connection)
        {
            @Override
            void first(final ByteBuffer message)
            {
                if (FabricMessages.type(message) != FabricMessages.CLAIM)
                {
                    deliver(message);
                    return;
                }
                final byte[][] claim = FabricMessages.decodeClaim(message);
                if (claim == null)
                {
                    refuse("malformed claim");
                    return;
                }
                final Long issued = tickets.remove(HexFormat.of().formatHex(claim[0]));
                final byte[] key = shm ? secret : token != null ? token : claim[0];
                if (refuseClaims)
                {
                    refuse("this server refuses upgrades (test)");
                }
                else if (issued == null || System.nanoTime() - issued > TICKET_LIFETIME_NANOS)
                {
                    refuse("unknown, used or expired ticket");
                }
                else if (!FabricMessages.claimVerifies(claim, key))
                {
                    refuse(shm ? "the claim's proof does not verify (the client did not read this server's secret " +
                        "file)" : "the claim's proof does not verify (another token)");
                }
                else if (!ReverbTransportProvider.send(connection, FabricMessages.claimed(claim[0], claim[1], key)))
                {
                    connection.close();
                }
            }
        };
    }

    private FabricMessages.Offer newOffer()
    {
        final FabricMessages.Offer offer = new FabricMessages.Offer();
        final FabricMessages.Offer t = template;
        offer.bootId = t.bootId;
        offer.shmDevice = t.shmDevice;
        offer.shmInode = t.shmInode;
        offer.shmName = t.shmName;
        offer.secretFile = t.secretFile;
        offer.rdmaAddress = t.rdmaAddress;
        offer.rdmaDevice = t.rdmaDevice;
        offer.rdmaPrefix = t.rdmaPrefix;
        offer.fabrics = t.fabrics;
        if (offer.fabrics != 0)
        {
            final long now = System.nanoTime();
            if (tickets.size() >= MAX_TICKETS)
            {
                tickets.values().removeIf(issued -> now - issued > TICKET_LIFETIME_NANOS);
            }
            if (tickets.size() >= MAX_TICKETS)
            {
                offer.fabrics = 0;
                provider.log("tickets", address + " has " + MAX_TICKETS + " upgrade tickets outstanding; new clients " +
                    "stay on tcp until they are used or expire");
            }
            else
            {
                tickets.put(HexFormat.of().formatHex(offer.ticket), now);
            }
        }
        if (offer.fabrics == 0)
        {
            Arrays.fill(offer.ticket, (byte)0);
        }
        return offer;
    }

    /**
     * A connection before it reaches the server's acceptor: sees the first message (and, after a CLAIMED, the next),
     * then hands the connection, with that message, to the acceptor's handler and steps aside.
     */
    private abstract class Gate implements ConnectionHandler
    {
        final Connection connection;
        private boolean seen;
        private boolean delivered;

        Gate(final Connection connection)
        {
            this.connection = connection;
        }

        /** The connection's first message. */
        abstract void first(ByteBuffer message);

        @Override
        public void onMessage(final Connection c, final ByteBuffer message)
        {
            if (delivered)
            {
                return; // rebound: not reached
            }
            if (!seen)
            {
                seen = true;
                first(message);
            }
            else
            {
                deliver(message);
            }
        }

        void deliver(final ByteBuffer message)
        {
            delivered = true;
            negotiating.remove(connection);
            final ConnectionHandler handler = closed ? null : acceptor.onConnection(connection);
            if (handler == null)
            {
                connection.close();
                return;
            }
            ((EngineTransportConnection)connection).rebind(handler);
            handler.onMessage(connection, message);
        }

        void refuse(final String reason)
        {
            delivered = true;
            negotiating.remove(connection);
            ReverbTransportProvider.send(connection, FabricMessages.refused(reason));
            connection.close();
        }

        @Override
        public void onWritable(final Connection c)
        {
        }

        @Override
        public void onClose(final Connection c, final Throwable cause)
        {
            negotiating.remove(connection);
        }
    }

    @Override
    public String address()
    {
        return address;
    }

    @Override
    public int port()
    {
        return tcpListener.port();
    }

    @Override
    public void close()
    {
        if (closed)
        {
            return;
        }
        closed = true;
        provider.listeners.remove(this);
        tcpListener.close();
        closeShm();
        if (rdmaListener != null)
        {
            rdmaListener.close();
        }
        for (final Iterator<Connection> it = negotiating.iterator(); it.hasNext();)
        {
            it.next().close(); // not accepted yet: the server never saw them
            it.remove();
        }
        tickets.clear();
    }

    private void closeShm()
    {
        if (shmListener != null)
        {
            shmListener.close();
            shmListener = null;
        }
        if (secretFile != null)
        {
            try
            {
                Files.deleteIfExists(secretFile);
            }
            catch (final IOException ex)
            {
                provider.log("secret", "cannot delete " + secretFile + ": " + ex.getMessage());
            }
        }
        template.fabrics &= ~FabricMessages.FABRIC_SHM;
    }
}
