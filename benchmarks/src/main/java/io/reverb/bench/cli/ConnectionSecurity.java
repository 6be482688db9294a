package io.reverb.bench.cli;

import io.grpc.ChannelCredentials;
import io.grpc.InsecureChannelCredentials;
import io.grpc.TlsChannelCredentials;
import io.reverb.rdma.engine.EngineConfig;
import io.reverb.rdma.verbs.TlsConfig;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyFactory;
import java.security.KeyStore;
import java.security.PrivateKey;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.security.spec.PKCS8EncodedKeySpec;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collection;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.net.ssl.KeyManager;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.TrustManager;
import javax.net.ssl.TrustManagerFactory;
import javax.net.ssl.X509KeyManager;
import javax.net.ssl.X509TrustManager;
import picocli.CommandLine;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;

/**
 * reverb-cli's {@code --token} and {@code --tls*} options (grpcurl's {@code -cacert}, {@code -cert}, {@code -key};
 * plaintext is the default, as grpcurl's {@code -plaintext}), and the engine settings or gRPC credentials they make.
 * Certificates and keys are PEM files: certificates as {@code openssl} writes them, the key unencrypted PKCS#8
 * ({@code BEGIN PRIVATE KEY}; {@code openssl pkcs8 -topk8 -nocrypt} converts the others).
 *
 * <p>The token is Reverb's transport token ({@code EngineConfig.authToken}): both sides prove they hold it in the
 * engine handshake of {@code tcp://}, {@code shm://}, {@code rdma://} and {@code reverb://}. TLS is that of
 * {@code tcp://} (and of {@code reverb://}'s tcp connection), or grpc-java's for {@code grpc://}.
 */
public final class ConnectionSecurity
{
    private static final Pattern PEM = Pattern.compile(
        "-----BEGIN ([A-Z0-9 ]+)-----([A-Za-z0-9+/=\\s]+)-----END \\1-----");

    @Option(names = "--token", paramLabel = "TOKEN", description = "Reverb's transport token (the server's " +
        "EngineConfig.authToken): both sides prove they hold it. Other users may read a command line (ps); " +
        "--token-file keeps it off it. Not for grpc:// (send -H 'authorization: ...' there).")
    String token;

    @Option(names = "--token-file", paramLabel = "FILE", description = "Reads the token from FILE (its first line).")
    Path tokenFile;

    @Option(names = "--tls", description = "TLS to the server (tcp://, reverb:// and grpc://; grpcurl's default, " +
        "whose -plaintext is this tool's default): the server's certificate must chain to --tls-ca, else to the " +
        "JDK's trust store, and name the host dialled.")
    boolean tls;

    @Option(names = "--tls-ca", paramLabel = "FILE", description = "PEM certificates of the CAs the server's " +
        "certificate may chain to (grpcurl's -cacert); implies --tls.")
    Path caFile;

    @Option(names = "--tls-cert", paramLabel = "FILE", description = "This client's PEM certificate chain, for a " +
        "server that asks for one (mutual TLS; grpcurl's -cert); needs --tls-key; implies --tls.")
    Path certFile;

    @Option(names = "--tls-key", paramLabel = "FILE", description = "The private key of --tls-cert: PEM, " +
        "unencrypted PKCS#8 (BEGIN PRIVATE KEY; grpcurl's -key).")
    Path keyFile;

    /** @return whether any TLS option is given. */
    boolean tlsWanted()
    {
        return tls || caFile != null || certFile != null || keyFile != null;
    }

    /**
     * @param scheme the address's scheme, lower case ({@code tcp}, {@code grpc}, {@code grpc+tcp}, ...).
     * @param line   the command line, for usage errors.
     * @throws ParameterException if the options contradict each other or do not apply to the scheme.
     */
    void check(final String scheme, final CommandLine line)
    {
        if (token != null && tokenFile != null)
        {
            throw new ParameterException(line, "give --token or --token-file, not both");
        }
        if ((certFile == null) != (keyFile == null))
        {
            throw new ParameterException(line, "--tls-cert and --tls-key go together");
        }
        final String fabric = scheme.startsWith(ReverbCli.GRPC_OVER_REVERB) ?
            scheme.substring(ReverbCli.GRPC_OVER_REVERB.length()) : scheme;
        if ("grpc".equals(fabric) && (token != null || tokenFile != null))
        {
            throw new ParameterException(line, "--token is Reverb's transport token; a gRPC server over Netty has " +
                "none (send its credentials as a header: -H 'authorization: Bearer ...')");
        }
        if (tlsWanted() && !"tcp".equals(fabric) && !"reverb".equals(fabric) && !"grpc".equals(fabric))
        {
            throw new ParameterException(line, "--tls applies to tcp://, reverb:// and grpc:// addresses, not " +
                scheme + "://");
        }
    }

    /**
     * @return the engine settings for a Reverb channel, or null when no option asks for any.
     * @throws CliException ({@link CliException#USAGE}) if a file cannot be read or does not hold what it should.
     */
    EngineConfig engineConfig()
    {
        final byte[] secret = tokenBytes();
        if (secret == null && !tlsWanted())
        {
            return null;
        }
        final EngineConfig config = new EngineConfig();
        if (secret != null)
        {
            config.authToken(secret);
        }
        if (tlsWanted())
        {
            final TlsConfig.Builder builder = TlsConfig.builder();
            if (caFile != null)
            {
                builder.trustManager(trustManager(caFile));
            }
            if (certFile != null)
            {
                builder.keyManager(keyManager(certFile, keyFile));
            }
            config.tls(builder.build());
        }
        return config;
    }

    /**
     * @return grpc-java's credentials for {@code grpc://}: TLS as the options say, else plaintext.
     * @throws CliException ({@link CliException#USAGE}) if a file cannot be read or does not hold what it should.
     */
    ChannelCredentials grpcCredentials()
    {
        if (!tlsWanted())
        {
            return InsecureChannelCredentials.create();
        }
        final TlsChannelCredentials.Builder builder = TlsChannelCredentials.newBuilder();
        if (caFile != null)
        {
            builder.trustManager(trustManager(caFile));
        }
        if (certFile != null)
        {
            builder.keyManager(keyManager(certFile, keyFile));
        }
        return builder.build();
    }

    private byte[] tokenBytes()
    {
        if (tokenFile != null)
        {
            final String text;
            try
            {
                text = Files.readString(tokenFile, StandardCharsets.UTF_8);
            }
            catch (final IOException ex)
            {
                throw new CliException(CliException.USAGE, "ERROR: cannot read --token-file " + tokenFile + ": " + ex);
            }
            final String first = text.lines().findFirst().orElse("");
            if (first.isEmpty())
            {
                throw new CliException(CliException.USAGE, "ERROR: --token-file " + tokenFile + " is empty");
            }
            return first.getBytes(StandardCharsets.UTF_8);
        }
        if (token != null && token.isEmpty())
        {
            throw new CliException(CliException.USAGE, "ERROR: --token must not be empty");
        }
        return token == null ? null : token.getBytes(StandardCharsets.UTF_8);
    }

    /**
     * @param file PEM certificates.
     * @return a trust manager whose anchors are exactly those certificates.
     * @throws CliException ({@link CliException#USAGE}) if the file cannot be read or holds no certificate.
     */
    static X509TrustManager trustManager(final Path file)
    {
        try
        {
            final KeyStore store = KeyStore.getInstance(KeyStore.getDefaultType());
            store.load(null, null);
            int i = 0;
            for (final Certificate certificate : certificates(file))
            {
                store.setCertificateEntry("ca-" + i++, certificate);
            }
            final TrustManagerFactory factory =
                TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
            factory.init(store);
            for (final TrustManager manager : factory.getTrustManagers())
            {
                if (manager instanceof X509TrustManager)
                {
                    return (X509TrustManager)manager;
                }
            }
            throw new CliException(CliException.USAGE, "ERROR: the JDK made no X.509 trust manager");
        }
        catch (final GeneralSecurityException | IOException ex)
        {
            throw new CliException(CliException.USAGE, "ERROR: cannot use --tls-ca " + file + ": " + ex.getMessage());
        }
    }

    /**
     * @param certFile PEM certificate chain, this side's first.
     * @param keyFile  its private key, PEM, unencrypted PKCS#8.
     * @return a key manager presenting them.
     * @throws CliException ({@link CliException#USAGE}) if a file cannot be read or does not hold what it should.
     */
    static X509KeyManager keyManager(final Path certFile, final Path keyFile)
    {
        final Collection<? extends Certificate> chain = certificates(certFile);
        final PrivateKey key = privateKey(keyFile);
        try
        {
            final KeyStore store = KeyStore.getInstance(KeyStore.getDefaultType());
            store.load(null, null);
            final char[] password = new char[0];
            store.setKeyEntry("client", key, password, chain.toArray(new Certificate[0]));
            final KeyManagerFactory factory = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
            factory.init(store, password);
            for (final KeyManager manager : factory.getKeyManagers())
            {
                if (manager instanceof X509KeyManager)
                {
                    return (X509KeyManager)manager;
                }
            }
            throw new CliException(CliException.USAGE, "ERROR: the JDK made no X.509 key manager");
        }
        catch (final GeneralSecurityException | IOException ex)
        {
            throw new CliException(CliException.USAGE, "ERROR: cannot use --tls-cert " + certFile + " with " +
                "--tls-key " + keyFile + ": " + ex.getMessage());
        }
    }

    private static Collection<? extends Certificate> certificates(final Path file)
    {
        try
        {
            final Collection<? extends Certificate> certificates = CertificateFactory.getInstance("X.509")
                .generateCertificates(new ByteArrayInputStream(Files.readAllBytes(file)));
            if (certificates.isEmpty())
            {
                throw new CliException(CliException.USAGE, "ERROR: " + file + " holds no PEM certificate");
            }
            return certificates;
        }
        catch (final IOException | GeneralSecurityException ex)
        {
            throw new CliException(CliException.USAGE, "ERROR: cannot read certificates from " + file + ": " +
                ex.getMessage());
        }
    }

    private static PrivateKey privateKey(final Path file)
    {
        final String text;
        try
        {
            text = Files.readString(file, StandardCharsets.US_ASCII);
        }
        catch (final IOException ex)
        {
            throw new CliException(CliException.USAGE, "ERROR: cannot read --tls-key " + file + ": " + ex);
        }
        final Matcher pem = PEM.matcher(text);
        if (!pem.find())
        {
            throw new CliException(CliException.USAGE, "ERROR: --tls-key " + file + " holds no PEM block");
        }
        if (!"PRIVATE KEY".equals(pem.group(1)))
        {
            throw new CliException(CliException.USAGE, "ERROR: --tls-key " + file + " holds a " + pem.group(1) +
                "; give an unencrypted PKCS#8 key (BEGIN PRIVATE KEY): openssl pkcs8 -topk8 -nocrypt -in KEY");
        }
        final byte[] der = Base64.getMimeDecoder().decode(pem.group(2));
        final List<String> tried = new ArrayList<>();
        for (final String algorithm : new String[] {"EC", "RSA", "Ed25519", "Ed448"})
        {
            try
            {
                return KeyFactory.getInstance(algorithm).generatePrivate(new PKCS8EncodedKeySpec(der));
            }
            catch (final GeneralSecurityException ex)
            {
                tried.add(algorithm);
            }
        }
        throw new CliException(CliException.USAGE, "ERROR: --tls-key " + file + " is not a private key of " +
            String.join(", ", tried));
    }
}
