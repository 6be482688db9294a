package io.reverb.rdma.rpc;

import static org.assertj.core.api.Assertions.assertThat;

import io.reverb.rpc.RpcChannel;
import io.reverb.rpc.RpcServer;
import io.reverb.rpc.transport.Connection;
import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.NetworkInterface;
import java.net.URI;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * Attack case (bin/attack-suite): a HELLO flood from one address, holding every connection open (a ticket is given
 * back when its connection closes, so that is the flood that costs the server most). Held: the flooder gets at most
 * {@link FabricTickets#MAX_PER_PEER} tickets; a client from the flooder's address stays on tcp and says why; a client
 * from another address of this host still moves to shm.
 */
class HelloFloodAttack extends FabricAttackBase
{
    private static final int FLOOD = FabricTickets.MAX_PER_PEER + 64;

    @Test
    void helloFloodFromOneAddress() throws Exception
    {
        final InetAddress other = otherLocalAddress();
        Assumptions.assumeTrue(other != null, "this host has no IPv4 address besides loopback for the second client");
        final RpcServer server = server("reverb://0.0.0.0:0", config);
        int offers = 0;
        int refusals = 0;
        final long start = System.nanoTime();
        for (int i = 0; i < FLOOD; i++)
        {
            final Recording handler = new Recording();
            final Connection connection = ReverbTransportTest.reverb().tcp.connect(
                URI.create("tcp://127.0.0.1:" + server.port()), EngineOptions.of(config), handler)
                .get(60, TimeUnit.SECONDS);
            closeables.add(connection::close);
            ReverbTransportProvider.send(connection, FabricMessages.hello(FabricMessages.random(16)));
            final ByteBuffer answer = handler.first.get(60, TimeUnit.SECONDS);
            if (FabricMessages.type(answer) == FabricMessages.OFFER &&
                FabricMessages.decodeOffer(answer, new byte[16], null).fabrics != 0)
            {
                offers++;
            }
            else
            {
                refusals++;
            }
        }
        final long floodMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
        final RpcChannel sameAddress = channel("reverb://127.0.0.1:" + server.port(), config);
        echo(sameAddress, "from the flooder's address");
        final RpcChannel otherAddress = channel("reverb://" + other.getHostAddress() + ":" + server.port(), config);
        echo(otherAddress, "from another address");
        final boolean told = log.stream().anyMatch(line -> line.contains("stays on tcp") &&
            line.contains("outstanding for the client's address 127.0.0.1"));
        final boolean held = offers <= FabricTickets.MAX_PER_PEER && "shm".equals(otherAddress.fabric()) && told;
        verdict("HELLO flood from one address", held, FLOOD + " HELLOs in " + floodMillis + " ms: " + offers +
            " offers with a ticket, " + refusals + " refusals; a client from 127.0.0.1 on " + sameAddress.fabric() +
            (told ? " (told why)" : " (not told why)") + "; a client from " + other.getHostAddress() + " on " +
            otherAddress.fabric());
        assertThat(held).isTrue();
    }

    private static InetAddress otherLocalAddress() throws Exception
    {
        for (final NetworkInterface nif : Collections.list(NetworkInterface.getNetworkInterfaces()))
        {
            if (!nif.isUp() || nif.isLoopback())
            {
                continue;
            }
            final List<InetAddress> addresses = new ArrayList<>(Collections.list(nif.getInetAddresses()));
            for (final InetAddress address : addresses)
            {
                if (address instanceof Inet4Address)
                {
                    return address;
                }
            }
        }
        return null;
    }
}
