package io.reverb.rdma.rpc;

import static org.assertj.core.api.Assertions.assertThat;

import io.reverb.rpc.RpcChannel;
import io.reverb.rpc.RpcServer;
import io.reverb.rpc.transport.Connection;
import io.reverb.rpc.transport.ServerListener;
import java.net.URI;
import java.nio.ByteBuffer;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * Attack cases (bin/attack-suite): an offer relayed from a second server. The client dials the attacker's address;
 * the attacker fetches an offer from a {@code reverb://} server of the same user on this host (it holds no token, and
 * cannot read the user's secret files) and hands it on, hoping the client's calls land on that server over shm.
 * Held: the client stays on tcp (with the attacker, whom it dialled) and says why.
 */
class RelayedOfferAttack extends FabricAttackBase
{
    @Test
    void byteRelayInFrontOfAnotherServer() throws Exception
    {
        final RpcServer victim = server("reverb://127.0.0.1:0", config);
        final TcpRelay relay = new TcpRelay(victim.port());
        closeables.add(relay);
        final RpcChannel channel = channel("reverb://127.0.0.1:" + relay.port(), config);
        echo(channel, "dialled the relay");
        final boolean held = "tcp".equals(channel.fabric());
        verdict("offer relayed byte for byte from a second server", held, "client on " + channel.fabric() +
            "; log: " + log);
        assertThat(held).isTrue();
        assertThat(log).anySatisfy(line -> assertThat(line).contains("stays on tcp"));
    }

    @Test
    void offerFetchedAndHandedOnByAFakeServer() throws Exception
    {
        final RpcServer victim = server("reverb://127.0.0.1:0", config);
        // the fake server: for each client's HELLO, asks the victim with the client's nonce and hands the offer on
        final ServerListener fake = ReverbTransportTest.reverb().tcp.listen(URI.create("tcp://127.0.0.1:0"),
            EngineOptions.of(config), client -> new Recording()
            {
                @Override
                public void onMessage(final Connection c, final ByteBuffer hello)
                {
                    final Recording upstream = new Recording();
                    final ByteBuffer copy = ByteBuffer.allocate(hello.remaining()).put(hello.duplicate()).flip();
                    ReverbTransportTest.reverb().tcp.connect(URI.create("tcp://127.0.0.1:" + victim.port()),
                        EngineOptions.of(config), upstream).thenAccept(toVictim ->
                        {
                            closeables.add(toVictim::close);
                            ReverbTransportProvider.send(toVictim, copy);
                            upstream.first.thenAccept(offer -> ReverbTransportProvider.send(c, offer));
                        });
                }
            });
        closeables.add(fake::close);
        final Connection connection = ReverbTransportTest.reverb().connect(
            URI.create("reverb://127.0.0.1:" + fake.port()), EngineOptions.of(config), new Recording())
            .get(60, TimeUnit.SECONDS);
        closeables.add(connection::close);
        final boolean held = "tcp".equals(connection.fabric());
        verdict("offer fetched from a second server and handed on by a fake one", held, "client on " +
            connection.fabric() + "; log: " + log);
        assertThat(held).isTrue();
        assertThat(log).anySatisfy(line -> assertThat(line).contains("stays on tcp")
            .contains("names another tcp connection"));
    }
}
