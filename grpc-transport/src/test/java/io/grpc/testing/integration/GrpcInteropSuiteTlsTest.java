// CHECKSTYLE.OFF: PackageName - grpc-java's package: AbstractInteropTest gives the server's address only there
package io.grpc.testing.integration;
// CHECKSTYLE.ON: PackageName

import io.reverb.grpc.ReverbChannelBuilder;
import io.reverb.grpc.ReverbServerBuilder;
import io.reverb.rdma.engine.EngineConfig;
import io.reverb.rdma.provider.tcp.SelfSignedCertificate;
import io.reverb.rdma.rpc.EngineOptions;
import io.reverb.rdma.verbs.TlsConfig;
import org.junit.BeforeClass;

import java.io.IOException;

/** grpc-java's interop test cases over Reverb's {@code tcp://} inside mutual TLS (loopback). */
public class GrpcInteropSuiteTlsTest extends AbstractReverbInteropTest
{
    private static EngineConfig serverEngine;
    private static EngineConfig clientEngine;

    @BeforeClass
    public static void certificates() throws IOException
    {
        final SelfSignedCertificate serverCert = SelfSignedCertificate.generate("interop-server", "ip:127.0.0.1");
        final SelfSignedCertificate clientCert = SelfSignedCertificate.generate("interop-client");
        serverEngine = new EngineConfig().name("interop-tls-server").tls(TlsConfig.builder()
            .keyManager(serverCert.keyManager()).trustManager(SelfSignedCertificate.trusting(clientCert))
            .clientAuth(TlsConfig.ClientAuth.REQUIRE).build());
        clientEngine = new EngineConfig().name("interop-tls-client").tls(TlsConfig.builder()
            .keyManager(clientCert.keyManager()).trustManager(SelfSignedCertificate.trusting(serverCert)).build());
    }

    @Override
    protected String newAddress()
    {
        return "tcp://127.0.0.1:0";
    }

    @Override
    protected ReverbServerBuilder configure(final ReverbServerBuilder builder)
    {
        return builder.reverbServer(b -> b.transportOptions(EngineOptions.of(serverEngine)));
    }

    @Override
    protected ReverbChannelBuilder configure(final ReverbChannelBuilder builder)
    {
        return builder.reverbChannel(b -> b.transportOptions(EngineOptions.of(clientEngine)));
    }
}
