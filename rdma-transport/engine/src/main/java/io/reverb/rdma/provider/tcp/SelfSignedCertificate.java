package io.reverb.rdma.provider.tcp;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.SecureRandom;
import java.security.cert.X509Certificate;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.KeyManager;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.TrustManager;
import javax.net.ssl.TrustManagerFactory;
import javax.net.ssl.X509KeyManager;
import javax.net.ssl.X509TrustManager;

/**
 * A throwaway self-signed certificate (EC P-256, valid two days), made with the JDK's own {@code keytool}, <b>for
 * tests and benchmarks only</b>: its key is generated on the spot and its trust is whatever you give it. Production
 * certificates come from your CA, through a {@code KeyManagerFactory} over your key store.
 *
 * <pre>{@code
 * SelfSignedCertificate server = SelfSignedCertificate.generate("localhost", "dns:localhost", "ip:127.0.0.1");
 * TlsConfig serverTls = TlsConfig.builder().keyManager(server.keyManager()).build();
 * TlsConfig clientTls = TlsConfig.builder().trustManager(SelfSignedCertificate.trusting(server)).build();
 * }</pre>
 */
public final class SelfSignedCertificate
{
    private static final String ALIAS = "reverb";
    private static final long KEYTOOL_TIMEOUT_SECONDS = 120;

    private final KeyStore keyStore;
    private final char[] password;
    private final X509Certificate certificate;

    private SelfSignedCertificate(final KeyStore keyStore, final char[] password) throws GeneralSecurityException
    {
        this.keyStore = keyStore;
        this.password = password;
        this.certificate = (X509Certificate)keyStore.getCertificate(ALIAS);
    }

    /**
     * @param commonName      the subject's CN.
     * @param subjectAltNames names the certificate is valid for, as keytool writes them: {@code dns:localhost},
     *                        {@code ip:127.0.0.1}; none for a certificate that names no host.
     * @return a new key pair and certificate.
     * @throws IOException if keytool cannot run or fails.
     */
    public static SelfSignedCertificate generate(final String commonName, final String... subjectAltNames)
        throws IOException
    {
        final char[] password = Long.toHexString(new SecureRandom().nextLong()).toCharArray();
        final Path dir = Files.createTempDirectory("reverb-tls");
        final Path file = dir.resolve("key.p12");
        try
        {
            final List<String> command = new ArrayList<>(List.of(keytool(), "-genkeypair", "-alias", ALIAS,
                "-keyalg", "EC", "-groupname", "secp256r1", "-sigalg", "SHA256withECDSA", "-validity", "2",
                "-dname", "CN=" + commonName, "-storetype", "PKCS12", "-keystore", file.toString(),
                "-storepass", new String(password), "-keypass", new String(password)));
            if (subjectAltNames.length > 0)
            {
                command.add("-ext");
                command.add("SAN=" + String.join(",", subjectAltNames));
            }
            final Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
            final byte[] output;
            try (InputStream in = process.getInputStream())
            {
                output = in.readAllBytes();
            }
            if (!process.waitFor(KEYTOOL_TIMEOUT_SECONDS, TimeUnit.SECONDS) || process.exitValue() != 0)
            {
                process.destroyForcibly();
                throw new IOException("keytool could not generate a certificate: " +
                    new String(output, StandardCharsets.UTF_8).trim());
            }
            final KeyStore store = KeyStore.getInstance("PKCS12");
            try (InputStream in = Files.newInputStream(file))
            {
                store.load(in, password);
            }
            return new SelfSignedCertificate(store, password);
        }
        catch (final InterruptedException ex)
        {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while generating a certificate", ex);
        }
        catch (final GeneralSecurityException ex)
        {
            throw new IOException("cannot load the generated certificate: " + ex.getMessage(), ex);
        }
        finally
        {
            Files.deleteIfExists(file);
            Files.deleteIfExists(dir);
        }
    }

    private static String keytool()
    {
        final Path path = Paths.get(System.getProperty("java.home"), "bin", "keytool");
        return Files.isExecutable(path) ? path.toString() : "keytool";
    }

    /** @return the certificate. */
    public X509Certificate certificate()
    {
        return certificate;
    }

    /** @return a key manager presenting this certificate and its private key. */
    public X509KeyManager keyManager()
    {
        try
        {
            final KeyManagerFactory factory = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
            factory.init(keyStore, password);
            for (final KeyManager manager : factory.getKeyManagers())
            {
                if (manager instanceof X509KeyManager)
                {
                    return (X509KeyManager)manager;
                }
            }
            throw new IllegalStateException("no X509KeyManager from " + factory.getAlgorithm());
        }
        catch (final GeneralSecurityException ex)
        {
            throw new IllegalStateException("cannot build a key manager: " + ex.getMessage(), ex);
        }
    }

    /**
     * @param trusted the certificates to trust, each as its own trust anchor.
     * @return a trust manager accepting peers presenting exactly one of them (PKIX validation).
     */
    public static X509TrustManager trusting(final SelfSignedCertificate... trusted)
    {
        try
        {
            final KeyStore store = KeyStore.getInstance("PKCS12");
            store.load(null, null);
            for (int i = 0; i < trusted.length; i++)
            {
                store.setCertificateEntry("trusted-" + i, trusted[i].certificate);
            }
            final TrustManagerFactory factory = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
            factory.init(store);
            for (final TrustManager manager : factory.getTrustManagers())
            {
                if (manager instanceof X509TrustManager)
                {
                    return (X509TrustManager)manager;
                }
            }
            throw new IllegalStateException("no X509TrustManager from " + factory.getAlgorithm());
        }
        catch (final GeneralSecurityException | IOException ex)
        {
            throw new IllegalStateException("cannot build a trust manager: " + ex.getMessage(), ex);
        }
    }
}
