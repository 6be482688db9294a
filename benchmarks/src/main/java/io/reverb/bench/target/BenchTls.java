package io.reverb.bench.target;

import io.reverb.rdma.engine.EngineConfig;
import io.reverb.rdma.provider.tcp.SelfSignedCertificate;
import io.reverb.rdma.rpc.EngineOptions;
import io.reverb.rdma.verbs.TlsConfig;
import io.reverb.rpc.transport.TransportOptions;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.Socket;
import java.net.URI;
import java.security.cert.X509Certificate;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.X509ExtendedTrustManager;

/**
 * {@code tcps://host:port} in reverb-bench: Reverb's {@code tcp://} inside TLS 1.3, to measure what encryption costs;
 * {@code reverbs://host:port} is {@code reverb://} with the same TLS on its tcp connection, which therefore must not
 * move to plaintext rdma ({@code bin/reverb-rdma-vm test} checks that it stays on tcp).
 * The server presents a self-signed certificate generated at start-up (keytool); the client trusts any server
 * certificate and checks no host name. <b>Benchmark only</b>: that is no secure set-up, but the data path (every
 * byte sealed and opened by the JDK's SSLEngine) is exactly the one a verified connection runs.
 */
final class BenchTls
{
    /** The scheme reverb-bench maps to {@code tcp://} with TLS. */
    static final String SCHEME = "tcps";
    /** The scheme reverb-bench maps to {@code reverb://} with TLS. */
    static final String REVERB_SCHEME = "reverbs";

    private static EngineConfig server;
    private static EngineConfig client;

    private BenchTls()
    {
    }

    static boolean isTls(final URI uri)
    {
        return SCHEME.equals(uri.getScheme()) || REVERB_SCHEME.equals(uri.getScheme());
    }

    /** @return the address as the transport knows it: {@code tcp://} or {@code reverb://}, TLS in the options. */
    static URI asTcp(final URI uri)
    {
        return isTls(uri) ? URI.create(plainScheme(uri.getScheme()) + uri.toString().substring(
            uri.getScheme().length())) : uri;
    }

    /** @return the server's address as reverb-bench shows it (back to tcps:// or reverbs://). */
    static String asTls(final String address)
    {
        if (address.startsWith("tcp://"))
        {
            return SCHEME + address.substring("tcp".length());
        }
        return address.startsWith("reverb://") ? REVERB_SCHEME + address.substring("reverb".length()) : address;
    }

    private static String plainScheme(final String tlsScheme)
    {
        return tlsScheme.substring(0, tlsScheme.length() - 1);
    }

    /** @return engine options with the server's TLS (one engine per JVM: the same config object every time). */
    static synchronized TransportOptions serverOptions()
    {
        if (server == null)
        {
            try
            {
                final SelfSignedCertificate certificate =
                    SelfSignedCertificate.generate("reverb-bench", "dns:localhost", "ip:127.0.0.1");
                server = new EngineConfig().name("reverb-bench-tls-server")
                    .tls(TlsConfig.builder().keyManager(certificate.keyManager()).build());
            }
            catch (final IOException ex)
            {
                throw new UncheckedIOException("tcps:// needs a certificate: " + ex.getMessage(), ex);
            }
        }
        return EngineOptions.of(server);
    }

    /** @return engine options with the client's TLS (trusts any server: benchmark only). */
    static synchronized TransportOptions clientOptions()
    {
        if (client == null)
        {
            client = new EngineConfig().name("reverb-bench-tls-client")
                .tls(TlsConfig.builder().trustManager(new TrustAny()).verifyHostname(false).build());
        }
        return EngineOptions.of(client);
    }

    /** Accepts every certificate: what reverb-bench measures is the cipher, not the trust decision. */
    private static final class TrustAny extends X509ExtendedTrustManager
    {
        @Override
        public void checkClientTrusted(final X509Certificate[] chain, final String authType)
        {
        }

        @Override
        public void checkServerTrusted(final X509Certificate[] chain, final String authType)
        {
        }

        @Override
        public void checkClientTrusted(final X509Certificate[] chain, final String authType, final Socket socket)
        {
        }

        @Override
        public void checkServerTrusted(final X509Certificate[] chain, final String authType, final Socket socket)
        {
        }

        @Override
        public void checkClientTrusted(final X509Certificate[] chain, final String authType, final SSLEngine engine)
        {
        }

        @Override
        public void checkServerTrusted(final X509Certificate[] chain, final String authType, final SSLEngine engine)
        {
        }

        @Override
        public X509Certificate[] getAcceptedIssuers()
        {
            return new X509Certificate[0];
        }
    }
}
