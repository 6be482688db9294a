package io.reverb.rdma.rpc;

import io.reverb.rdma.verbs.TlsConfig;
import io.reverb.rpc.transport.Connection;
import io.reverb.rpc.transport.ConnectionHandler;
import io.reverb.rpc.transport.TransportOptions;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;

/**
 * One {@code reverb://} connect, the client side of the negotiation ({@link ReverbTransportProvider} describes it).
 *
 * <p>States, guarded by this object: <b>tcp</b> (connecting, then the HELLO sent, waiting for the OFFER);
 * <b>deciding</b> (the offer received; the checks of the host identity and the secret file run on a pool thread, not
 * the engine's); <b>upgrading</b> (the new fabric's connection made, the CLAIM sent, waiting for CLAIMED);
 * <b>settled</b> on the new fabric (CLAIMED verified: the new connection is rebound to the RPC layer's handler on its
 * own delivery thread, then the tcp connection is closed) or on tcp (any failure or timeout: the upgrade attempt is
 * closed, the tcp connection rebound, the reason logged once). The future completes once, when settled. A tcp
 * connection that closes before the offer came was not a {@code reverb://} server's (a plain {@code tcp://} server
 * closes on the HELLO, which it cannot parse): the connect is made again over plain tcp.
 *
 * <p>The claim is bound to the tcp connection the offer came over, as this side's socket has it (its local address
 * and the address dialled): the server admits it only for the connection it issued the ticket on, so an offer relayed
 * by whoever answers at the dialled address is refused, and the client stays on tcp and says why. With TLS the client
 * moves to shm (which never leaves the host; the server proves it holds its secret file) but to rdma, which has no
 * encryption, only when {@link TlsConfig#allowPlaintextRdma()} allows it, and says so once.
 */
final class ReverbConnect
{
    private final ReverbTransportProvider provider;
    private final URI uri;
    private final URI tcpUri;
    private final TransportOptions options;
    private final ConnectionHandler handler;
    private final CompletableFuture<Connection> result = new CompletableFuture<>();
    private final byte[] nonce = FabricMessages.random(FabricMessages.NONCE_LENGTH);
    private final byte[] token;
    private final TlsConfig tls;

    // guarded by this
    private Connection tcp;
    private Connection upgrade;
    private Connection settledOn;
    private boolean offered;
    private boolean settled;
    private boolean tcpClosed;
    private int step;

    ReverbConnect(final ReverbTransportProvider provider, final URI uri, final URI tcpUri, final TransportOptions options,
        final ConnectionHandler handler)
    {
        this.provider = provider;
        this.uri = uri;
        this.tcpUri = tcpUri;
        this.options = options;
        this.handler = handler;
        this.token = ReverbTransportProvider.token(options);
        this.tls = ReverbTransportProvider.tls(options);
    }

    CompletableFuture<Connection> start()
    {
        provider.tcp.connect(tcpUri, options, new TcpSide()).whenComplete((connection, failure) ->
        {
            if (failure != null)
            {
                result.completeExceptionally(unwrap(failure));
                return;
            }
            final int armed;
            synchronized (this)
            {
                tcp = connection;
                armed = ++step;
            }
            if (!ReverbTransportProvider.send(connection, FabricMessages.hello(nonce)))
            {
                connection.close();
                result.completeExceptionally(new IOException("cannot send the fabric request to " + uri +
                    ": the tcp connection closed"));
                return;
            }
            timeout(armed, "no fabric offer from the server within " + ReverbTransportProvider.NEGOTIATION_TIMEOUT_MILLIS +
                " ms");
        });
        return result;
    }

    private void timeout(final int armed, final String reason)
    {
        CompletableFuture.delayedExecutor(ReverbTransportProvider.NEGOTIATION_TIMEOUT_MILLIS, TimeUnit.MILLISECONDS)
            .execute(() ->
            {
                synchronized (this)
                {
                    if (settled || step != armed)
                    {
                        return;
                    }
                }
                stay(reason);
            });
    }

    /** The offer, on a pool thread: which fabric, if any. */
    private void decide(final FabricMessages.Offer offer)
    {
        if (offer.fabrics == 0)
        {
            stay(null); // the server offers tcp only: nothing to say
            return;
        }
        final byte[] binding = binding();
        if (binding == null)
        {
            stay("cannot bind a claim to the tcp connection (its socket addresses are unknown)");
            return;
        }
        String why = null;
        if (offer.offers(FabricMessages.FABRIC_SHM))
        {
            try
            {
                final byte[] secret = shmKey(offer);
                upgrade("shm", provider.shm, ReverbTransportProvider.sibling(uri, "shm", offer.shmName), secret,
                    offer.ticket, binding);
                return;
            }
            catch (final IOException ex)
            {
                why = "shm: " + ex.getMessage();
            }
        }
        if (offer.offers(FabricMessages.FABRIC_RDMA))
        {
            final String problem = rdmaProblem(offer);
            if (problem == null)
            {
                final String target = FabricMessages.rdmaText(FabricMessages.rdmaEndpoint(offer.rdmaAddress));
                if (tls != null)
                {
                    provider.log("plaintext-rdma " + uri.getAuthority(), uri + " moves from TLS on tcp to rdma " +
                        "at " + target + ", which has no encryption, as TlsConfig.allowPlaintextRdma allows");
                }
                upgrade("rdma", provider.rdma, ReverbTransportProvider.sibling(uri, "rdma", target),
                    token != null ? token : offer.ticket, offer.ticket, binding);
                return;
            }
            why = (why == null ? "" : why + "; ") + "rdma: " + problem;
        }
        stay(why);
    }

    /**
     * @return the key of a shm claim: the server's secret, read from this side's own private shm directory.
     * @throws IOException saying why shm cannot be used.
     */
    private byte[] shmKey(final FabricMessages.Offer offer) throws IOException
    {
        final byte[] bootId;
        try
        {
            bootId = HostIdentity.bootId(HostIdentity.BOOT_ID);
        }
        catch (final IOException ex)
        {
            throw new IOException("cannot read this host's boot id: " + ex.getMessage(), ex);
        }
        if (!Arrays.equals(bootId, offer.bootId))
        {
            throw new IOException("the server runs on another host (its kernel boot id differs)");
        }
        final Path dir = ReverbTransportProvider.shmDirectory(options);
        final long[] key;
        try
        {
            key = HostIdentity.deviceAndInode(dir);
        }
        catch (final IOException ex)
        {
            throw new IOException("cannot read this side's shm directory: " + ex.getMessage(), ex);
        }
        if (key[0] != offer.shmDevice || key[1] != offer.shmInode)
        {
            throw new IOException("the server's shm directory is not this side's " + dir + " (another container, " +
                "another /dev/shm, or another directory configured)");
        }
        final String problem = HostIdentity.privateDirectoryProblem(dir);
        if (problem != null)
        {
            throw new IOException("this side's shm directory is not private to this user: " + problem);
        }
        try
        {
            return HostIdentity.readSecret(dir.resolve(offer.secretFile));
        }
        catch (final IOException ex)
        {
            throw new IOException("cannot read the server's secret file " + dir.resolve(offer.secretFile) +
                " (another user's server?): " + ex, ex);
        }
    }

    /** @return why the client cannot move to the offer's rdma address, or null if it can. */
    private String rdmaProblem(final FabricMessages.Offer offer)
    {
        if (tls != null && !tls.allowPlaintextRdma())
        {
            return "this side uses TLS, and rdma would carry the calls in plaintext (TlsConfig.Builder" +
                ".allowPlaintextRdma(true) allows it)";
        }
        final InetAddress server;
        try
        {
            server = FabricMessages.rdmaEndpoint(offer.rdmaAddress).getAddress(); // a literal: never resolved
        }
        catch (final IllegalArgumentException ex)
        {
            return ex.getMessage();
        }
        return RdmaChoice.problem(provider.rdma.unavailabilityCause(), server, offer.rdmaPrefix, RdmaChoice.locals());
    }

    /** @return the binding of a claim to the tcp connection, as this side's socket has it; null if unknown. */
    private byte[] binding()
    {
        final Connection onTcp;
        synchronized (this)
        {
            onTcp = tcp;
        }
        final InetSocketAddress[] sockets = onTcp instanceof EngineTransportConnection ?
            ((EngineTransportConnection)onTcp).engineConnection().socketAddresses() : null;
        return sockets == null ? null : FabricMessages.binding(sockets[0], sockets[1]);
    }

    private void upgrade(final String fabric, final EngineTransport transport, final URI target, final byte[] key,
        final byte[] ticket, final byte[] binding)
    {
        final byte[] claimNonce = FabricMessages.random(FabricMessages.NONCE_LENGTH);
        transport.connect(target, options, new UpgradeSide(fabric, key, ticket, claimNonce))
            .whenComplete((connection, failure) ->
            {
                if (failure != null)
                {
                    stay(fabric + ": cannot connect to " + target + ": " + unwrap(failure).getMessage());
                    return;
                }
                final int armed;
                final boolean stale;
                synchronized (this)
                {
                    stale = settled;
                    if (!stale)
                    {
                        upgrade = connection;
                    }
                    armed = ++step;
                }
                if (stale)
                {
                    connection.close(); // settled meanwhile (timed out, or the tcp connection closed)
                    return;
                }
                if (!ReverbTransportProvider.send(connection, FabricMessages.claim(ticket, claimNonce, binding, key)))
                {
                    stay(fabric + ": cannot send the claim to " + target);
                    return;
                }
                timeout(armed, fabric + ": no answer to the claim within " +
                    ReverbTransportProvider.NEGOTIATION_TIMEOUT_MILLIS + " ms");
            });
    }

    /** On the new connection's delivery thread: CLAIMED verified. */
    private void settleUpgrade(final Connection connection)
    {
        final Connection old;
        synchronized (this)
        {
            if (settled || upgrade != connection)
            {
                connection.close();
                return;
            }
            settled = true;
            settledOn = connection;
            old = tcp;
            if ("shm".equals(connection.fabric()))
            {
                // the server proved itself on the tcp connection inside TLS; this one claimed that connection's
                // ticket on this host (not over rdma: TLS does not protect that traffic)
                ((EngineTransportConnection)connection).inheritTls(old.sslSession());
            }
            ((EngineTransportConnection)connection).rebind(handler);
        }
        old.close(); // its close reaches TcpSide, which ignores it
        result.complete(connection);
    }

    /** Stays on tcp (or, if it closed, fails the connect); reason null: nothing to log. */
    private void stay(final String reason)
    {
        final Connection attempt;
        final Connection onTcp;
        synchronized (this)
        {
            if (settled)
            {
                return;
            }
            settled = true;
            attempt = upgrade;
            onTcp = tcpClosed ? null : tcp;
            settledOn = onTcp;
            if (onTcp != null)
            {
                ((EngineTransportConnection)onTcp).rebind(handler);
            }
        }
        if (attempt != null)
        {
            attempt.close();
        }
        if (onTcp == null)
        {
            result.completeExceptionally(new IOException("connection to " + uri + " closed during the fabric " +
                "negotiation" + (reason == null ? "" : " (" + reason + ")")));
            return;
        }
        if (reason != null)
        {
            provider.log("fallback " + uri.getAuthority() + " " + reason.substring(0, Math.min(reason.length(), 24)),
                uri + " stays on tcp: " + reason);
        }
        result.complete(onTcp);
    }

    /**
     * The server was not a reverb:// one, or went away before it offered anything: connect again over plain tcp.
     *
     * @param answeredRpc whether it answered the fabric request with an RPC frame (a tcp:// server), rather than
     *                    closing the connection (a tcp:// server too, or one shutting down).
     * @param cause       why the connection closed, or null.
     */
    private void plainTcp(final boolean answeredRpc, final Throwable cause)
    {
        provider.log("plain " + uri.getAuthority(), uri + (answeredRpc ?
            ": the server answered the fabric request with an RPC frame (a tcp:// server, not reverb://)" :
            ": the server closed the connection before offering fabrics (a tcp:// server, not reverb://, or one " +
            "shutting down" + (cause == null || cause.getMessage() == null ? "" : ": " + cause.getMessage()) + ")") +
            "; connecting over plain tcp");
        provider.tcp.connect(tcpUri, options, handler).whenComplete((connection, failure) ->
        {
            if (failure != null)
            {
                result.completeExceptionally(unwrap(failure));
            }
            else
            {
                result.complete(connection);
            }
        });
    }

    private static Throwable unwrap(final Throwable failure)
    {
        return failure instanceof CompletionException && failure.getCause() != null ? failure.getCause() : failure;
    }

    /** The tcp connection's handler until it is settled on (then the RPC layer's takes over). */
    private final class TcpSide implements ConnectionHandler
    {
        @Override
        public void onMessage(final Connection connection, final ByteBuffer message)
        {
            final byte type = FabricMessages.type(message);
            final FabricMessages.Offer offer;
            synchronized (ReverbConnect.this)
            {
                if (settled || offered)
                {
                    return; // nothing else is sent on it before the RPC layer's first frame
                }
                offered = true;
                step++;
                if (type == 0)
                {
                    settled = true; // an RPC frame (a plain server's GOAWAY for the HELLO it cannot parse)
                }
            }
            if (type == 0)
            {
                connection.close();
                plainTcp(true, null);
                return;
            }
            if (type != FabricMessages.OFFER)
            {
                stay("the server answered the fabric request with " + (type == FabricMessages.REFUSED ?
                    "a refusal: " + FabricMessages.refusedReason(message) : "something else (type " + type + ")"));
                return;
            }
            try
            {
                offer = FabricMessages.decodeOffer(message, nonce, token);
            }
            catch (final IllegalArgumentException ex)
            {
                stay("the server's offer is refused: " + ex.getMessage());
                return;
            }
            CompletableFuture.runAsync(() -> decide(offer)).exceptionally(failure ->
            {
                stay("choosing a fabric failed: " + failure);
                return null;
            });
        }

        @Override
        public void onWritable(final Connection connection)
        {
            final ConnectionHandler forward;
            synchronized (ReverbConnect.this)
            {
                forward = settledOn == connection ? handler : null;
            }
            if (forward != null)
            {
                forward.onWritable(connection);
            }
        }

        @Override
        public void onClose(final Connection connection, final Throwable cause)
        {
            final boolean forward;
            final boolean notReverb;
            synchronized (ReverbConnect.this)
            {
                tcpClosed = true;
                forward = settledOn == connection; // rebound to the RPC layer while this close was on its way
                notReverb = !settled && !offered && tcp != null;
                if (notReverb)
                {
                    settled = true;
                }
            }
            if (forward)
            {
                handler.onClose(connection, cause);
            }
            else if (notReverb)
            {
                plainTcp(false, cause);
            }
        }
    }

    /** The new fabric's connection's handler until CLAIMED (then the RPC layer's takes over). */
    private final class UpgradeSide implements ConnectionHandler
    {
        private final String fabric;
        private final byte[] key;
        private final byte[] ticket;
        private final byte[] claimNonce;
        private boolean answered;

        UpgradeSide(final String fabric, final byte[] key, final byte[] ticket, final byte[] claimNonce)
        {
            this.fabric = fabric;
            this.key = key;
            this.ticket = ticket;
            this.claimNonce = claimNonce;
        }

        @Override
        public void onMessage(final Connection connection, final ByteBuffer message)
        {
            if (answered)
            {
                return;
            }
            answered = true;
            final byte type = FabricMessages.type(message);
            if (type == FabricMessages.CLAIMED && FabricMessages.claimedVerifies(message, ticket, claimNonce, key))
            {
                settleUpgrade(connection);
            }
            else if (type == FabricMessages.REFUSED)
            {
                stay(fabric + ": the server refused the upgrade: " + FabricMessages.refusedReason(message));
            }
            else
            {
                stay(fabric + ": the server's answer to the claim does not verify");
            }
        }

        @Override
        public void onWritable(final Connection connection)
        {
            final ConnectionHandler forward;
            synchronized (ReverbConnect.this)
            {
                forward = settledOn == connection ? handler : null;
            }
            if (forward != null)
            {
                forward.onWritable(connection);
            }
        }

        @Override
        public void onClose(final Connection connection, final Throwable cause)
        {
            final boolean forward;
            synchronized (ReverbConnect.this)
            {
                forward = settledOn == connection;
            }
            if (forward)
            {
                handler.onClose(connection, cause);
            }
            else
            {
                stay(fabric + ": the connection closed during the upgrade" + (cause == null ? "" : ": " +
                    cause.getMessage()));
            }
        }
    }
}
