package io.reverb.rdma.rpc;

import static org.assertj.core.api.Assertions.assertThat;

import io.reverb.rdma.provider.tcp.SelfSignedCertificate;
import io.reverb.rdma.verbs.TlsConfig;
import io.reverb.rpc.RpcChannel;
import io.reverb.rpc.RpcServer;
import io.reverb.rpc.transport.Connection;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.ByteBuffer;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Attack cases (bin/attack-suite): a client without credentials against the shm listener of a mutual-TLS
 * {@code reverb://} server (the fabric listener this host always has; the rdma one is
 * {@code RdmaWithoutCredentialsAttack} in rdma-transport/disni). Held: nothing without the client certificate gets a
 * call answered, a claim of a made-up ticket is refused, and a client with the certificate still moves to shm.
 */
class FabricWithoutCredentialsAttack extends FabricAttackBase
{
    private static SelfSignedCertificate serverCert;
    private static SelfSignedCertificate clientCert;

    @BeforeAll
    static void certificates() throws IOException
    {
        serverCert = SelfSignedCertificate.generate("attack-server", "dns:localhost", "ip:127.0.0.1");
        clientCert = SelfSignedCertificate.generate("attack-client");
    }

    private RpcServer mutualTlsServer()
    {
        return server("reverb://127.0.0.1:0", config.copy().name("attack-tls-server").tls(TlsConfig.builder()
            .keyManager(serverCert.keyManager()).trustManager(SelfSignedCertificate.trusting(clientCert))
            .clientAuth(TlsConfig.ClientAuth.REQUIRE).build()));
    }

    @Test
    void plainShmClientAgainstAMutualTlsServer()
    {
        final RpcServer server = mutualTlsServer();
        final String shm = ReverbTransportTest.listener(server.port()).shmAddress();
        final RpcChannel intruder = channel(shm, config.copy().name("attack-intruder"));
        final boolean[] answered = {false};
        try
        {
            echo(intruder, "without a certificate");
            answered[0] = true;
        }
        catch (final RuntimeException refused)
        {
            verdict("plain shm client vs mutual-TLS reverb:// server", true, "refused: " + refused.getMessage());
        }
        if (answered[0])
        {
            verdict("plain shm client vs mutual-TLS reverb:// server", false, "a call was answered over " + shm);
        }
        assertThat(answered[0]).as("a call answered without the client certificate").isFalse();
        // the legitimate path still works
        final RpcChannel client = channel("reverb://127.0.0.1:" + server.port(), config.copy().name("attack-client")
            .tls(TlsConfig.builder().keyManager(clientCert.keyManager())
                .trustManager(SelfSignedCertificate.trusting(serverCert)).build()));
        assertThat(echo(client, "with a certificate")).isEqualTo("with a certificate");
        assertThat(client.fabric()).isEqualTo("shm");
    }

    @Test
    void claimOfAMadeUpTicketOnTheShmListener() throws Exception
    {
        final RpcServer server = mutualTlsServer();
        final String shm = ReverbTransportTest.listener(server.port()).shmAddress();
        final Recording handler = new Recording();
        final Connection connection = ReverbTransportTest.reverb().shm.connect(URI.create(shm),
            EngineOptions.of(config.copy().name("attack-claimer")), handler).get(60, TimeUnit.SECONDS);
        closeables.add(connection::close);
        final byte[] binding = FabricMessages.binding(new InetSocketAddress("127.0.0.1", 40000),
            new InetSocketAddress("127.0.0.1", server.port()));
        ReverbTransportProvider.send(connection, FabricMessages.claim(FabricMessages.random(16),
            FabricMessages.random(16), binding, FabricMessages.random(32)));
        final ByteBuffer answer = handler.first.get(60, TimeUnit.SECONDS);
        final boolean held = FabricMessages.type(answer) == FabricMessages.REFUSED;
        verdict("claim of a made-up ticket on a mutual-TLS server's shm listener", held,
            held ? "refused: " + FabricMessages.refusedReason(answer) : "answered type " + FabricMessages.type(answer));
        assertThat(held).isTrue();
        handler.closed.get(60, TimeUnit.SECONDS); // and the connection is closed
    }
}
