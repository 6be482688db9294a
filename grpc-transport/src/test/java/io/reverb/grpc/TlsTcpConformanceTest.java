package io.reverb.grpc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.grpc.ManagedChannel;
import io.grpc.ManagedChannelBuilder;
import io.grpc.SecurityLevel;
import io.grpc.Server;
import io.grpc.ServerBuilder;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.reverb.rdma.engine.EngineConfig;
import io.reverb.rdma.provider.tcp.SelfSignedCertificate;
import io.reverb.rdma.rpc.EngineOptions;
import io.reverb.grpc.test.EchoGrpc;
import io.reverb.grpc.test.EchoRequest;
import io.reverb.rdma.verbs.TlsConfig;
import java.io.IOException;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The grpc-java conformance suite over Reverb's {@code tcp://} inside mutual TLS: engine settings reach Reverb through
 * {@link ReverbServerBuilder#reverbServer} and {@link ReverbChannelBuilder#reverbChannel}.
 */
class TlsTcpConformanceTest extends AbstractReverbConformanceTest
{
    private static EngineConfig serverEngine;
    private static EngineConfig clientEngine;

    @BeforeAll
    static void certificates() throws IOException
    {
        final SelfSignedCertificate serverCert = SelfSignedCertificate.generate("grpc-server", "ip:127.0.0.1");
        final SelfSignedCertificate clientCert = SelfSignedCertificate.generate("grpc-client");
        serverEngine = new EngineConfig().name("grpc-tls-server").tls(TlsConfig.builder().keyManager(serverCert.keyManager())
            .trustManager(SelfSignedCertificate.trusting(clientCert)).clientAuth(TlsConfig.ClientAuth.REQUIRE).build());
        clientEngine = new EngineConfig().name("grpc-tls-client").tls(TlsConfig.builder().keyManager(clientCert.keyManager())
            .trustManager(SelfSignedCertificate.trusting(serverCert)).build());
    }

    @Override
    protected String newAddress()
    {
        return "tcp://127.0.0.1:0";
    }

    @Override
    protected String unreachableAddress()
    {
        return "tcp://127.0.0.1:1";
    }

    @Override
    protected ManagedChannelBuilder<?> newUnreachableChannelBuilder()
    {
        // a TLS client that reaches nothing: a network failure, UNAVAILABLE as without TLS
        return ((ReverbChannelBuilder)super.newUnreachableChannelBuilder())
            .reverbChannel(b -> b.transportOptions(EngineOptions.of(clientEngine)));
    }

    @Override
    protected ServerBuilder<?> newServerBuilder()
    {
        return ((ReverbServerBuilder)super.newServerBuilder())
            .reverbServer(b -> b.transportOptions(EngineOptions.of(serverEngine)));
    }

    @Override
    protected ManagedChannelBuilder<?> newChannelBuilder(final Server grpcServer)
    {
        return ((ReverbChannelBuilder)super.newChannelBuilder(grpcServer))
            .reverbChannel(b -> b.transportOptions(EngineOptions.of(clientEngine)));
    }

    @Test
    void shouldRefuseAPlaintextGrpcClientUnauthenticatedWhileServingTheTlsOne()
    {
        final ManagedChannel plain = ReverbChannelBuilder.forTarget(server.getListenSockets().get(0).toString()).build();
        try
        {
            assertThatThrownBy(() -> EchoGrpc.newBlockingStub(plain).unary(EchoRequest.getDefaultInstance()))
                .isInstanceOfSatisfying(StatusRuntimeException.class, e ->
                {
                    assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.UNAUTHENTICATED);
                    assertThat(e.getStatus().getDescription()).contains("requires TLS");
                });
            assertThat(EchoGrpc.newBlockingStub(channel).unary(EchoRequest.getDefaultInstance())).isNotNull();
        }
        finally
        {
            plain.shutdownNow();
        }
    }

    @Override
    protected SecurityLevel expectedSecurityLevel()
    {
        return SecurityLevel.PRIVACY_AND_INTEGRITY;
    }

    @Override
    protected String clientCertificateSubject()
    {
        return "CN=grpc-client";
    }
}
