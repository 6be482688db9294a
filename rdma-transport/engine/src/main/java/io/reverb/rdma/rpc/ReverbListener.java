package io.reverb.rdma.rpc;

import io.reverb.rdma.verbs.TlsConfig;
import io.reverb.rpc.transport.Connection;
import io.reverb.rpc.transport.ConnectionHandler;
import io.reverb.rpc.transport.ServerListener;
import io.reverb.rpc.transport.TransportOptions;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.ByteBuffer;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.Iterator;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

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
 * <p>No fabric admits a weaker peer than the tcp port. With a token, every fabric's engine handshake checks it.
 * With TLS, which only tcp has, the shm and rdma listeners admit a connection only when its first message is a valid
 * CLAIM of a ticket issued over a TLS connection (its proof bound to that connection); anything else is refused and
 * never reaches the acceptor. A server with TLS offers rdma, which has no encryption, only when its
 * {@link TlsConfig#allowPlaintextRdma()} says so.
 *
 * <p>Tickets ({@link FabricTickets}) are bound to the tcp connection they were issued on, live 30 s at most, are
 * returned when that connection closes or carries an RPC frame, and are counted per peer address: a peer cannot grow
 * the table, nor starve other addresses. A HELLO beyond the limits is answered with a REFUSED that says why, and the
 * connection stays open for the client's calls over tcp.
 */
final class ReverbListener implements ServerListener
{
    /** Name of the secret file in the shm directory, before the shm name. */
    static final String SECRET_PREFIX = "fabric-";
    static final String SECRET_SUFFIX = ".key";

    private final ReverbTransportProvider provider;
    private final ServerListener.Acceptor acceptor;
    private final byte[] token;
    private final TlsConfig tls;
    private volatile FabricTickets tickets = new FabricTickets();
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
        this.tls = ReverbTransportProvider.tls(options);
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
        if (tls != null && !tls.allowPlaintextRdma())
        {
            provider.log("listen-rdma", address + " does not offer rdma: its tcp port uses TLS, and rdma would carry " +
                "the calls in plaintext (TlsConfig.Builder.allowPlaintextRdma(true) offers it)");
            return;
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
            template.rdmaAddress = FabricMessages.rdmaText(new InetSocketAddress(advertised, parsed.getPort()));
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

    /** @return the rdma listener's address (rdma://ip:port), or null if rdma is not offered. */
    String rdmaAddress()
    {
        return rdmaListener == null ? null : "rdma://" + template.rdmaAddress;
    }

    /** @return the secret file, or null if shm is not offered. */
    Path secretFile()
    {
        return secretFile;
    }

    /** Test seam: smaller ticket limits (before any client came). */
    void ticketLimits(final int maxTickets, final int maxPerPeer)
    {
        tickets = new FabricTickets(maxTickets, maxPerPeer);
    }

    /** Test seam: @return upgrade tickets outstanding, all peers together. */
    int ticketsOutstanding()
    {
        return tickets.size();
    }

    /** Test seam: @return upgrade tickets counted against one peer key ({@link FabricTickets#peerKey}). */
    int ticketsHeldBy(final String peer)
    {
        return tickets.held(peer);
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
            private byte[] ticket;

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
                final FabricMessages.Offer offer = new FabricMessages.Offer();
                final String declined = newOffer(connection, offer);
                if (declined != null)
                {
                    // the client stays on tcp and logs why; this connection carries its calls
                    ReverbTransportProvider.send(connection, FabricMessages.refused(declined));
                    return;
                }
                if (offer.fabrics != 0)
                {
                    ticket = offer.ticket;
                }
                if (!ReverbTransportProvider.send(connection, FabricMessages.offer(offer, nonce, token)))
                {
                    connection.close();
                }
            }

            @Override
            void leaving()
            {
                if (ticket != null)
                {
                    tickets.release(ticket); // the client stayed on tcp, or went: the ticket is of no more use
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
                    if (tls != null)
                    {
                        // the tcp port requires TLS, which this fabric cannot check: only a claim of a ticket issued
                        // over a TLS connection proves what TLS proved there
                        refuse("this reverb:// server's tcp port requires TLS; its " + (shm ? "shm" : "rdma") +
                            " listener admits only a client that moved from it (connect to " + address + ")");
                        return;
                    }
                    deliver(message);
                    return;
                }
                final FabricMessages.Claim claim = FabricMessages.decodeClaim(message);
                if (claim == null)
                {
                    refuse("malformed claim");
                    return;
                }
                final FabricTickets.Issued issued = tickets.take(claim.ticket(), System.nanoTime());
                final byte[] key = shm ? secret : token != null ? token : claim.ticket();
                if (refuseClaims)
                {
                    refuse("this server refuses upgrades (test)");
                }
                else if (issued == null)
                {
                    refuse("unknown, used or expired ticket");
                }
                else if (!FabricMessages.claimVerifies(claim, key))
                {
                    refuse(shm ? "the claim's proof does not verify (the client did not read this server's secret " +
                        "file)" : "the claim's proof does not verify (another token)");
                }
                else if (!Arrays.equals(claim.binding(), issued.binding()))
                {
                    refuse("the claim names another tcp connection than the one its ticket was issued on (an offer " +
                        "relayed from this server by the one the client dialled, or a NAT or proxy between them)");
                }
                else
                {
                    if (shm)
                    {
                        // what TLS proved of the client on the tcp connection holds for this one (it claimed that
                        // connection's ticket, on this host): its handlers see that session. Not over rdma, whose
                        // traffic TLS does not protect: a session there would claim a privacy it does not have.
                        ((EngineTransportConnection)connection).inheritTls(issued.tls());
                    }
                    if (!ReverbTransportProvider.send(connection, FabricMessages.claimed(claim.ticket(), claim.nonce(), key)))
                    {
                        connection.close();
                    }
                }
            }
        };
    }

    /**
     * Fills an offer for a tcp connection, with a ticket bound to it.
     *
     * @return null, or why no offer is made (the client is told so and stays on tcp).
     */
    private String newOffer(final Connection connection, final FabricMessages.Offer offer)
    {
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
        if (offer.fabrics == 0)
        {
            Arrays.fill(offer.ticket, (byte)0);
            return null;
        }
        final InetSocketAddress[] sockets = ((EngineTransportConnection)connection).engineConnection().socketAddresses();
        if (sockets == null)
        {
            return "the server cannot bind a ticket to this connection (its socket addresses are unknown)";
        }
        final String peer = FabricTickets.peerKey(sockets[1].getAddress());
        // a fresh, unpredictable ticket per offer: it is the key of a tokenless rdma claim's proof, and the table's key
        offer.ticket = FabricMessages.random(FabricMessages.NONCE_LENGTH);
        final String declined = tickets.issue(offer.ticket, peer, FabricMessages.binding(sockets[1], sockets[0]),
            ((EngineTransportConnection)connection).engineConnection().sslSession(), System.nanoTime());
        if (declined != null)
        {
            // one key for every peer (the message names it): peers' addresses must not fill the limiter's keys
            provider.log("tickets", address + ": " + declined + "; new clients from there stay on tcp until " +
                "those connections settle, close or their tickets expire");
        }
        return declined;
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

        /** The connection leaves the gate (delivered, refused or closed): once. */
        void leaving()
        {
        }

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
            leaving();
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
            leaving();
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
            if (!delivered)
            {
                leaving();
            }
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
