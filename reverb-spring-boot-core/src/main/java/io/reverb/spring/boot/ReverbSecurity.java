package io.reverb.spring.boot;

import io.reverb.rdma.engine.EngineConfig;
import io.reverb.rdma.engine.RdmaEngine;
import io.reverb.rdma.rpc.EngineOptions;
import io.reverb.rdma.verbs.TlsConfig;
import io.reverb.rpc.transport.TransportOptions;
import java.net.InetAddress;
import java.net.URI;
import java.net.URISyntaxException;
import java.net.UnknownHostException;
import java.util.Locale;
import java.util.Set;
import org.springframework.boot.ssl.NoSuchSslBundleException;
import org.springframework.boot.ssl.SslBundle;
import org.springframework.boot.ssl.SslBundles;

/**
 * The engine settings that {@code reverb.server.auth-token}, {@code reverb.server.tls.*} and their channel
 * equivalents make, and whether a server's address reaches beyond this host's loopback interface.
 */
final class ReverbSecurity
{
    /** Schemes that never listen on a network: a peer must be on this host (or in this process). */
    private static final Set<String> HOST_LOCAL = Set.of("shm", "inproc");

    private ReverbSecurity()
    {
    }

    /**
     * @param server  {@code reverb.server.*}.
     * @param bundles Spring Boot's SSL bundles, or null when there are none.
     * @return the engine settings with the token and TLS, or null when neither is set.
     * @throws IllegalStateException if TLS is asked for without a usable bundle.
     */
    static EngineConfig server(final ReverbProperties.Server server, final SslBundles bundles)
    {
        final ReverbProperties.ServerTls tls = server.getTls();
        TlsConfig config = null;
        if (enabled(tls))
        {
            final SslBundle bundle = bundle("reverb.server.tls", tls, bundles);
            if (bundle == null || bundle.getStores().getKeyStore() == null)
            {
                throw new IllegalStateException("reverb.server.tls is enabled but " + (bundle == null ?
                    "names no bundle" : "bundle '" + tls.getBundle() + "' has no key store") + ": a server needs its " +
                    "certificate and key (spring.ssl.bundle.pem.NAME.keystore.* or spring.ssl.bundle.jks.NAME.keystore.*)");
            }
            config = tls(bundle).clientAuth(TlsConfig.ClientAuth.valueOf(tls.getClientAuth().name())).build();
        }
        return engine("reverb.server.auth-token", server.getAuthToken(), config);
    }

    /**
     * @param name    the channel's name.
     * @param channel {@code reverb.client.channels.NAME.*}.
     * @param bundles Spring Boot's SSL bundles, or null when there are none.
     * @return the engine settings with the token and TLS, or null when neither is set.
     * @throws IllegalStateException if a named bundle does not exist.
     */
    static EngineConfig channel(final String name, final ReverbProperties.Channel channel, final SslBundles bundles)
    {
        final ReverbProperties.ChannelTls tls = channel.getTls();
        TlsConfig config = null;
        if (enabled(tls))
        {
            final SslBundle bundle = bundle("reverb.client.channels." + name + ".tls", tls, bundles);
            // no bundle: the JDK's trust store, as a browser trusts public CAs
            final TlsConfig.Builder builder = bundle == null ? TlsConfig.builder() : tls(bundle);
            config = builder.verifyHostname(tls.isVerifyHostname()).build();
        }
        return engine("reverb.client.channels." + name + ".auth-token", channel.getAuthToken(), config);
    }

    private static boolean enabled(final ReverbProperties.Tls tls)
    {
        return tls.getEnabled() != null ? tls.getEnabled() : tls.getBundle() != null && !tls.getBundle().isBlank();
    }

    private static SslBundle bundle(final String property, final ReverbProperties.Tls tls, final SslBundles bundles)
    {
        final String name = tls.getBundle();
        if (name == null || name.isBlank())
        {
            return null;
        }
        if (bundles == null)
        {
            throw new IllegalStateException(property + ".bundle=" + name + " but the context has no SslBundles " +
                "(Spring Boot's SslAutoConfiguration, with spring.ssl.bundle.*)");
        }
        try
        {
            return bundles.getBundle(name.trim());
        }
        catch (final NoSuchSslBundleException ex)
        {
            throw new IllegalStateException(property + ".bundle=" + name + ": " + ex.getMessage(), ex);
        }
    }

    private static TlsConfig.Builder tls(final SslBundle bundle)
    {
        final TlsConfig.Builder builder = TlsConfig.builder().sslContext(bundle.createSslContext());
        final String[] protocols = bundle.getOptions().getEnabledProtocols();
        if (protocols != null && protocols.length > 0)
        {
            builder.protocols(protocols);
        }
        return builder;
    }

    private static EngineConfig engine(final String tokenProperty, final String token, final TlsConfig tls)
    {
        if (token != null && token.isEmpty())
        {
            throw new IllegalStateException(tokenProperty + " is empty: leave it unset for no token");
        }
        if (token != null && token.contains("${"))
        {
            // Spring binds a placeholder it cannot resolve as the text itself: the documented
            // auth-token=${REVERB_TOKEN}, started without the variable, would make that public text the token
            throw new IllegalStateException(tokenProperty + " holds an unresolved placeholder (" +
                token.substring(token.indexOf("${")).split("}", 2)[0] + "}): set it (e.g. the environment variable " +
                "it names), or leave the property unset for no token");
        }
        if (token == null && tls == null)
        {
            return null;
        }
        return new EngineConfig().authToken(token).tls(tls);
    }

    /**
     * @param options a server's or channel's transport options, customizers applied.
     * @return whether its engine has a token or TLS.
     */
    static boolean secured(final TransportOptions options)
    {
        EngineConfig config = options.get(EngineOptions.ENGINE_CONFIG);
        final RdmaEngine engine = options.get(EngineOptions.ENGINE);
        if (engine != null)
        {
            config = engine.config();
        }
        return config != null && (config.authToken() != null || config.tls() != null);
    }

    /**
     * @param address a server's address.
     * @return whether peers beyond this host's loopback interface may reach it: a tcp, rdma or reverb address whose
     *         host is not a loopback address (a wildcard, an interface's address, a name that resolves to one), or
     *         one whose host cannot be told. shm:// and inproc:// never are.
     */
    static boolean beyondLoopback(final String address)
    {
        final int separator = address.indexOf("://");
        final String scheme = separator < 0 ? "" : address.substring(0, separator).toLowerCase(Locale.ROOT);
        if (HOST_LOCAL.contains(scheme))
        {
            return false;
        }
        final String host;
        try
        {
            host = new URI(address.trim()).getHost();
        }
        catch (final URISyntaxException ex)
        {
            return true;
        }
        if (host == null || host.isEmpty())
        {
            return true;
        }
        try
        {
            // the application's own setting, resolved as the listener will resolve it
            return !InetAddress.getByName(host.startsWith("[") ? host.substring(1, host.length() - 1) : host)
                .isLoopbackAddress();
        }
        catch (final UnknownHostException ex)
        {
            return true;
        }
    }
}
