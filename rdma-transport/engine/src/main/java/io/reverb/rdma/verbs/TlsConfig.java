package io.reverb.rdma.verbs;

import java.security.GeneralSecurityException;
import java.util.Arrays;
import java.util.Objects;
import javax.net.ssl.KeyManager;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.TrustManager;

/**
 * TLS for {@code tcp://}: every byte of a connection (the connection handshake with its auth nonces and proofs,
 * then all frames) travels inside a TLS session (JDK {@link SSLEngine}, TLS 1.3 by default). Immutable; built once.
 *
 * <pre>{@code
 * // server: its certificate, and (mutual TLS) the CA its clients' certificates must chain to
 * TlsConfig server = TlsConfig.builder().keyManager(serverKeys).trustManager(clientCa)
 *     .clientAuth(TlsConfig.ClientAuth.REQUIRE).build();
 * // client: the CA the server's certificate must chain to (and its own certificate for mutual TLS)
 * TlsConfig client = TlsConfig.builder().trustManager(serverCa).keyManager(clientKeys).build();
 * RpcServer.builder("tcp://0.0.0.0:7000").transportOptions(EngineOptions.of(new EngineConfig().tls(server)))...
 * }</pre>
 *
 * <p>What it gives: confidentiality and integrity of the traffic, the server authenticated to the client by its
 * certificate (and, unless {@link #verifyHostname()} is off, by the host name or IP address the client dialled),
 * and with {@link ClientAuth#REQUIRE} the client authenticated to the server. A side with TLS refuses a peer
 * without it, with an error that says so. Engine settings given to both a server and a channel share one engine
 * (see {@code EngineOptions}): its TLS config then acts in both roles, so give it both a key and a trust manager.
 */
public final class TlsConfig
{
    /** Whether a server asks clients for a certificate. */
    public enum ClientAuth
    {
        /** Clients are not asked for a certificate (server-only authentication). */
        NONE,
        /** Clients are asked; one without a certificate is admitted, one with an untrusted certificate is refused. */
        OPTIONAL,
        /** Mutual TLS: a client without a trusted certificate is refused. */
        REQUIRE
    }

    /** TLS protocol versions enabled by default. */
    public static final String[] DEFAULT_PROTOCOLS = {"TLSv1.3"};

    private final SSLContext context;
    private final ClientAuth clientAuth;
    private final boolean verifyHostname;
    private final boolean allowPlaintextRdma;
    private final String[] protocols;

    private TlsConfig(final Builder builder)
    {
        this.context = builder.context;
        this.clientAuth = builder.clientAuth;
        this.verifyHostname = builder.verifyHostname;
        this.allowPlaintextRdma = builder.allowPlaintextRdma;
        this.protocols = builder.protocols.clone();
    }

    /** @return a builder. */
    public static Builder builder()
    {
        return new Builder();
    }

    /** @return the SSL context sessions are created from. */
    public SSLContext sslContext()
    {
        return context;
    }

    /** @return whether a server asks clients for certificates. */
    public ClientAuth clientAuth()
    {
        return clientAuth;
    }

    /** @return whether a client checks that the server's certificate names the host (or IP) it dialled. */
    public boolean verifyHostname()
    {
        return verifyHostname;
    }

    /**
     * @return whether {@code reverb://} may move a connection that this config protects on tcp to the rdma fabric,
     *         which has no encryption ({@link Builder#allowPlaintextRdma(boolean)}).
     */
    public boolean allowPlaintextRdma()
    {
        return allowPlaintextRdma;
    }

    /** @return enabled protocol versions (a copy). */
    public String[] protocols()
    {
        return protocols.clone();
    }

    /**
     * A new session's engine (used by the {@code tcp://} provider).
     *
     * @param client true for the connecting side.
     * @param host   the host the client dialled (for SNI and host name verification); ignored for servers.
     * @param port   the port the client dialled; ignored for servers.
     * @return the engine, protocols and client authentication set.
     */
    public SSLEngine newEngine(final boolean client, final String host, final int port)
    {
        final SSLEngine engine = client ? context.createSSLEngine(host, port) : context.createSSLEngine();
        engine.setUseClientMode(client);
        final SSLParameters parameters = engine.getSSLParameters();
        parameters.setProtocols(protocols);
        if (client)
        {
            if (verifyHostname)
            {
                parameters.setEndpointIdentificationAlgorithm("HTTPS");
            }
        }
        else
        {
            parameters.setNeedClientAuth(clientAuth == ClientAuth.REQUIRE);
            if (clientAuth == ClientAuth.OPTIONAL)
            {
                parameters.setWantClientAuth(true);
            }
        }
        engine.setSSLParameters(parameters);
        return engine;
    }

    @Override
    public String toString()
    {
        return "TlsConfig{protocols=" + Arrays.toString(protocols) + ", clientAuth=" + clientAuth +
            ", verifyHostname=" + verifyHostname + ", allowPlaintextRdma=" + allowPlaintextRdma + '}';
    }

    /** Builds a {@link TlsConfig}: an {@link SSLContext}, or the key and trust managers to make one from. */
    public static final class Builder
    {
        private SSLContext context;
        private KeyManager keyManager;
        private TrustManager trustManager;
        private ClientAuth clientAuth = ClientAuth.NONE;
        private boolean verifyHostname = true;
        private boolean allowPlaintextRdma;
        private String[] protocols = DEFAULT_PROTOCOLS;

        private Builder()
        {
        }

        /**
         * @param keyManager this side's certificate and private key: required on a server, and on a client for
         *                   mutual TLS (e.g. from a {@code KeyManagerFactory} over a PKCS#12 key store).
         * @return this.
         */
        public Builder keyManager(final KeyManager keyManager)
        {
            this.keyManager = keyManager;
            return this;
        }

        /**
         * @param trustManager decides which peer certificates are trusted (e.g. from a {@code TrustManagerFactory}
         *                     over a key store holding your CA); null uses the JDK's default trust store.
         * @return this.
         */
        public Builder trustManager(final TrustManager trustManager)
        {
            this.trustManager = trustManager;
            return this;
        }

        /**
         * @param context a ready SSL context, instead of {@link #keyManager} and {@link #trustManager}.
         * @return this.
         */
        public Builder sslContext(final SSLContext context)
        {
            this.context = context;
            return this;
        }

        /** @param clientAuth whether a server asks clients for certificates; default NONE. @return this. */
        public Builder clientAuth(final ClientAuth clientAuth)
        {
            this.clientAuth = Objects.requireNonNull(clientAuth, "clientAuth");
            return this;
        }

        /**
         * @param verify whether a client checks that the server's certificate names the host or IP address of the
         *               {@code tcp://} address it dialled (HTTPS rules); default true. Turn it off only when the
         *               trust manager pins the server's certificate itself.
         * @return this.
         */
        public Builder verifyHostname(final boolean verify)
        {
            this.verifyHostname = verify;
            return this;
        }

        /**
         * Lets {@code reverb://} carry a TLS connection's calls over the rdma fabric, which has no encryption: the
         * calls then lose the confidentiality and integrity TLS gave them on tcp (the peer stays authenticated: the
         * rdma connection must claim a ticket issued over this TLS connection, with a proof bound to it). Off by
         * default: a {@code reverb://} client with TLS then stays on tcp (or moves to shm, which never leaves the
         * host and whose server proves it holds its secret file), saying why once, and a {@code reverb://} server
         * with TLS does not offer rdma. Set it on both sides to use rdma with TLS on the tcp port; the client logs
         * the move once.
         *
         * @param allow whether to allow it; default false.
         * @return this.
         */
        public Builder allowPlaintextRdma(final boolean allow)
        {
            this.allowPlaintextRdma = allow;
            return this;
        }

        /** @param protocols enabled TLS versions; default {@code TLSv1.3}. @return this. */
        public Builder protocols(final String... protocols)
        {
            if (protocols == null || protocols.length == 0)
            {
                throw new IllegalArgumentException("at least one TLS protocol version is needed");
            }
            this.protocols = protocols.clone();
            return this;
        }

        /**
         * @return the config.
         * @throws IllegalArgumentException if both a context and managers are given, or the context cannot be made.
         */
        public TlsConfig build()
        {
            if (context != null && (keyManager != null || trustManager != null))
            {
                throw new IllegalArgumentException("give TlsConfig either an SSLContext or key/trust managers, not both");
            }
            if (context == null)
            {
                try
                {
                    context = SSLContext.getInstance("TLS");
                    context.init(keyManager == null ? null : new KeyManager[] {keyManager},
                        trustManager == null ? null : new TrustManager[] {trustManager}, null);
                }
                catch (final GeneralSecurityException ex)
                {
                    throw new IllegalArgumentException("cannot create an SSLContext for tcp:// TLS: " + ex.getMessage(), ex);
                }
            }
            final TlsConfig config = new TlsConfig(this);
            try
            {
                config.newEngine(false, null, -1);
            }
            catch (final IllegalArgumentException ex)
            {
                throw new IllegalArgumentException("tcp:// TLS settings are not supported by this JDK: " + ex.getMessage(), ex);
            }
            return config;
        }
    }
}
