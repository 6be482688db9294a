package io.reverb.rdma.rpc;

import static org.assertj.core.api.Assertions.assertThat;

import io.reverb.rpc.transport.Connection;
import io.reverb.rpc.transport.ServerListener;
import java.io.IOException;
import java.net.URI;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * Attack cases (bin/attack-suite): a fake {@code reverb://} server that answers the client's fabric request with a
 * hostile offer. Held: the client's connect settles on tcp (or fails with an error) within the negotiation timeout,
 * says why, creates and opens nothing outside its shm directory, and resolves no name.
 */
class HostileOfferAttack extends FabricAttackBase
{
    private static FabricMessages.Offer shmOffer(final String name, final String secretFile) throws IOException
    {
        final FabricMessages.Offer offer = new FabricMessages.Offer();
        offer.fabrics = FabricMessages.FABRIC_SHM;
        offer.ticket = FabricMessages.random(16);
        offer.bootId = HostIdentity.bootId(HostIdentity.BOOT_ID);
        offer.shmName = name;
        offer.secretFile = secretFile;
        return offer;
    }

    private static FabricMessages.Offer rdmaOffer(final String address)
    {
        final FabricMessages.Offer offer = new FabricMessages.Offer();
        offer.fabrics = FabricMessages.FABRIC_RDMA;
        offer.ticket = FabricMessages.random(16);
        offer.rdmaAddress = address;
        offer.rdmaPrefix = 8;
        return offer;
    }

    /**
     * Runs one case: the fake server answers each HELLO with {@code answer} (null: says nothing); held also needs a
     * log line with {@code why} (the reason the client refused the offer before it used any of its fields).
     */
    private void attack(final String name, final Function<byte[], ByteBuffer> answer, final String why)
        throws Exception
    {
        final long[] key = HostIdentity.deviceAndInode(dir);
        final ServerListener fake = ReverbTransportTest.reverb().tcp.listen(URI.create("tcp://127.0.0.1:0"),
            EngineOptions.of(config.copy().name("attack-fake").maxOutboundMessageSize(80 << 20)), client -> new Recording()
            {
                @Override
                public void onMessage(final Connection c, final ByteBuffer message)
                {
                    final byte[] nonce = FabricMessages.helloNonce(message);
                    final ByteBuffer reply = nonce == null ? null : answer.apply(nonce);
                    if (reply != null)
                    {
                        // the offer's directory fields point at the client's own directory, to get as far as possible
                        if (FabricMessages.type(reply) == FabricMessages.OFFER && reply.remaining() >= 60)
                        {
                            reply.order(ByteOrder.LITTLE_ENDIAN).putLong(44, key[0]).putLong(52, key[1]);
                        }
                        ReverbTransportProvider.send(c, reply);
                    }
                }
            });
        closeables.add(fake::close);
        final long start = System.nanoTime();
        String outcome;
        boolean held;
        try
        {
            final Connection connection = ReverbTransportTest.reverb().connect(
                URI.create("reverb://127.0.0.1:" + fake.port()), EngineOptions.of(config), new Recording())
                .get(60, TimeUnit.SECONDS);
            closeables.add(connection::close);
            outcome = "settled on " + connection.fabric();
            held = "tcp".equals(connection.fabric());
        }
        catch (final ExecutionException failed)
        {
            outcome = "connect failed: " + failed.getCause();
            held = true;
        }
        final long millis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
        try (Stream<Path> left = Files.list(dir))
        {
            final long files = left.count();
            held &= files == 0;
            outcome += ", " + files + " files in the shm directory";
        }
        held &= Files.notExists(Path.of("/tmp/reverb-attack-escape"))
            && Files.notExists(Path.of("/tmp/reverb-attack-escape.sock"));
        held &= millis < 30_000;
        held &= log.stream().anyMatch(line -> line.contains(why));
        verdict("hostile offer: " + name, held, outcome + " in " + millis + " ms; log: " + log);
        assertThat(held).as(outcome + "; log: " + log).isTrue();
    }

    @Test
    void shmNameWithSlashAndDots() throws Exception
    {
        attack("shm name with '/' and '..'", nonce -> offerOf(() -> shmOffer("../../../tmp/reverb-attack-escape",
            "fabric-../../../tmp/reverb-attack-escape.key"), nonce), "offer is refused: shm name");
    }

    @Test
    void shmNameOfDotsOnly() throws Exception
    {
        attack("shm name '..'", nonce -> offerOf(() -> shmOffer("..", "fabric-...key"), nonce),
            "offer is refused: shm name");
    }

    @Test
    void shmNameOf300Bytes() throws Exception
    {
        attack("300-byte shm name", nonce -> offerOf(() -> shmOffer("a".repeat(300), "fabric-a.key"), nonce),
            "offer is refused: shm name of 300 bytes");
    }

    @Test
    void hostNameAsTheRdmaAddress() throws Exception
    {
        attack("host name as the rdma address (never resolved)", nonce -> offerOf(() ->
            rdmaOffer("rdma-attacker.invalid:7000"), nonce), "host names are not resolved");
    }

    @Test
    void queryStringInTheRdmaAddress() throws Exception
    {
        attack("query string in the rdma address", nonce -> offerOf(() -> rdmaOffer("127.0.0.1:7000?polling=busy#"),
            nonce), "offer is refused: rdma address");
    }

    @Test
    void offerOf64MiB() throws Exception
    {
        attack("64 MiB offer", nonce ->
        {
            final ByteBuffer huge = ByteBuffer.allocate(64 << 20);
            huge.put(FabricMessages.offer(rdmaOffer("127.0.0.1:7000"), nonce, null));
            return huge.position(0);
        }, "stays on tcp"); // refused by its length, or (on a loaded host) not received within the timeout
    }

    @Test
    void unknownFabricBits() throws Exception
    {
        attack("unknown fabric bits", nonce -> offerOf(() ->
        {
            final FabricMessages.Offer offer = rdmaOffer("127.0.0.1:7000");
            offer.fabrics = 0xFFFF_FFFF;
            return offer;
        }, nonce), "unknown fabrics");
    }

    @Test
    void silence() throws Exception
    {
        attack("silence", nonce -> null, "no fabric offer from the server");
    }

    /** Makes an offer that a test builds with a checked exception. */
    private interface OfferMaker
    {
        FabricMessages.Offer make() throws IOException;
    }

    private static ByteBuffer offerOf(final OfferMaker maker, final byte[] nonce)
    {
        try
        {
            return FabricMessages.offer(maker.make(), nonce, null);
        }
        catch (final IOException ex)
        {
            throw new IllegalStateException(ex);
        }
    }
}
