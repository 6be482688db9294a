package io.reverb.rdma.rpc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.reverb.rpc.wire.FrameHeaderFlyweight;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The negotiation messages of {@code reverb://} ({@link FabricMessages}) and the rdma choice ({@link RdmaChoice}):
 * every field a peer sends is checked, an offer cannot be forged or altered without the token, a claim's proof binds
 * the key and the ticket, and no RPC frame is ever taken for one of these messages.
 */
class FabricMessagesTest
{
    private static final byte[] TOKEN = "fabric-token-0123456789".getBytes(StandardCharsets.UTF_8);

    private static FabricMessages.Offer offer()
    {
        final FabricMessages.Offer offer = new FabricMessages.Offer();
        offer.fabrics = FabricMessages.FABRIC_SHM | FabricMessages.FABRIC_RDMA;
        offer.ticket = FabricMessages.random(16);
        offer.bootId = FabricMessages.random(16);
        offer.shmDevice = 42;
        offer.shmInode = 4242;
        offer.shmName = "reverb-7000-abcdef";
        offer.secretFile = "fabric-reverb-7000-abcdef.key";
        offer.rdmaAddress = "10.0.0.5:7000";
        offer.rdmaDevice = "mlx5_0";
        offer.rdmaPrefix = 24;
        return offer;
    }

    @Test
    void shouldDecodeWhatWasEncodedAndCheckTheProofWithTheToken()
    {
        final FabricMessages.Offer sent = offer();
        final byte[] nonce = FabricMessages.random(16);
        final ByteBuffer message = FabricMessages.offer(sent, nonce, TOKEN);
        assertThat(FabricMessages.type(message)).isEqualTo(FabricMessages.OFFER);
        final FabricMessages.Offer got = FabricMessages.decodeOffer(message, nonce, TOKEN);
        assertThat(got.fabrics).isEqualTo(sent.fabrics);
        assertThat(got.ticket).isEqualTo(sent.ticket);
        assertThat(got.bootId).isEqualTo(sent.bootId);
        assertThat(got.shmDevice).isEqualTo(42);
        assertThat(got.shmInode).isEqualTo(4242);
        assertThat(got.shmName).isEqualTo(sent.shmName);
        assertThat(got.secretFile).isEqualTo(sent.secretFile);
        assertThat(got.rdmaAddress).isEqualTo("10.0.0.5:7000");
        assertThat(got.rdmaDevice).isEqualTo("mlx5_0");
        assertThat(got.rdmaPrefix).isEqualTo(24);
        assertThat(message.position()).as("decoding does not move the caller's buffer").isZero();
    }

    @Test
    void shouldRefuseAnOfferAlteredOnTheWayOrMadeWithoutTheToken()
    {
        final byte[] nonce = FabricMessages.random(16);
        final ByteBuffer genuine = FabricMessages.offer(offer(), nonce, TOKEN);
        // a byte of the shm name changed: the name a man in the middle would like the client to use
        final ByteBuffer altered = ByteBuffer.allocate(genuine.remaining()).put(genuine.duplicate()).flip();
        altered.put(62, (byte)'X');
        assertThatThrownBy(() -> FabricMessages.decodeOffer(altered, nonce, TOKEN))
            .hasMessageContaining("proof does not verify");
        // made by someone without the token, or for another HELLO (a replayed offer)
        assertThatThrownBy(() -> FabricMessages.decodeOffer(FabricMessages.offer(offer(), nonce, null), nonce, TOKEN))
            .hasMessageContaining("proof does not verify");
        assertThatThrownBy(() -> FabricMessages.decodeOffer(genuine, FabricMessages.random(16), TOKEN))
            .hasMessageContaining("proof does not verify");
    }

    @Test
    void shouldRefuseOffersWhoseFieldsDoNotHold()
    {
        final byte[] nonce = FabricMessages.random(16);
        final FabricMessages.Offer path = offer();
        path.shmName = "a/../../tmp/evil";
        assertThatThrownBy(() -> FabricMessages.decodeOffer(FabricMessages.offer(path, nonce, null), nonce, null))
            .hasMessageContaining("shm name").hasMessageContaining("only letters");
        final FabricMessages.Offer hidden = offer();
        hidden.secretFile = ".hidden";
        assertThatThrownBy(() -> FabricMessages.decodeOffer(FabricMessages.offer(hidden, nonce, null), nonce, null))
            .hasMessageContaining("secret file name");
        final FabricMessages.Offer unknown = offer();
        unknown.fabrics = 0x80;
        assertThatThrownBy(() -> FabricMessages.decodeOffer(FabricMessages.offer(unknown, nonce, null), nonce, null))
            .hasMessageContaining("unknown fabrics");
        // a string length beyond the message
        final ByteBuffer lying = FabricMessages.offer(offer(), nonce, null);
        lying.order(ByteOrder.LITTLE_ENDIAN).putShort(60, (short)40_000);
        assertThatThrownBy(() -> FabricMessages.decodeOffer(lying, nonce, null)).hasMessageContaining("exceeds");
        // truncated
        final ByteBuffer whole = FabricMessages.offer(offer(), nonce, null);
        final ByteBuffer truncated = whole.duplicate().limit(whole.limit() - 1);
        assertThatThrownBy(() -> FabricMessages.decodeOffer(truncated, nonce, null))
            .isInstanceOf(IllegalArgumentException.class);
        final ByteBuffer shortOne = whole.duplicate().limit(30);
        assertThatThrownBy(() -> FabricMessages.decodeOffer(shortOne, nonce, null)).hasMessageContaining("is not of");
    }

    @Test
    void shouldBindAClaimToItsKeyAndTicket()
    {
        final byte[] key = FabricMessages.random(32);
        final byte[] ticket = FabricMessages.random(16);
        final byte[] claimNonce = FabricMessages.random(16);
        final byte[] binding = FabricMessages.binding(new InetSocketAddress("127.0.0.1", 40000),
            new InetSocketAddress("127.0.0.1", 7000));
        final FabricMessages.Claim claim = FabricMessages.decodeClaim(
            FabricMessages.claim(ticket, claimNonce, binding, key));
        assertThat(claim).isNotNull();
        assertThat(claim.ticket()).isEqualTo(ticket);
        assertThat(claim.binding()).isEqualTo(binding);
        assertThat(FabricMessages.claimVerifies(claim, key)).isTrue();
        assertThat(FabricMessages.claimVerifies(claim, FabricMessages.random(32))).as("another secret").isFalse();
        final byte[] otherBinding = binding.clone();
        otherBinding[17] ^= 1; // another local port
        assertThat(FabricMessages.claimVerifies(new FabricMessages.Claim(ticket, claimNonce, otherBinding,
            claim.proof()), key)).as("the binding is under the proof").isFalse();
        final ByteBuffer claimed = FabricMessages.claimed(ticket, claimNonce, key);
        assertThat(FabricMessages.claimedVerifies(claimed, ticket, claimNonce, key)).isTrue();
        assertThat(FabricMessages.claimedVerifies(claimed, FabricMessages.random(16), claimNonce, key))
            .as("another ticket").isFalse();
        assertThat(FabricMessages.claimedVerifies(claimed, ticket, FabricMessages.random(16), key))
            .as("a replayed answer").isFalse();
        assertThat(FabricMessages.decodeClaim(ByteBuffer.allocate(10))).isNull();
    }

    @Test
    void shouldBindTheSameConnectionAlikeFromBothEndsAndAnotherOneNot() throws Exception
    {
        final InetSocketAddress client = new InetSocketAddress("127.0.0.1", 40000);
        final InetSocketAddress server = new InetSocketAddress("127.0.0.1", 7000);
        // the server's socket on a dual-stack wildcard may see the client as ::ffff:127.0.0.1
        final InetSocketAddress mapped = new InetSocketAddress(InetAddress.getByAddress(
            new byte[] {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, (byte)0xFF, (byte)0xFF, 127, 0, 0, 1}), 40000);
        assertThat(FabricMessages.binding(client, server)).isEqualTo(FabricMessages.binding(mapped, server))
            .hasSize(FabricMessages.BINDING_LENGTH);
        // a relay: the client dialled 127.0.0.1:7001, the relay reached the server from its own port
        assertThat(FabricMessages.binding(client, new InetSocketAddress("127.0.0.1", 7001)))
            .isNotEqualTo(FabricMessages.binding(new InetSocketAddress("127.0.0.1", 40001), server));
    }

    @Test
    void shouldAcceptOnlyALiteralIpAndPortAsTheRdmaAddress()
    {
        assertThat(FabricMessages.rdmaEndpoint("10.0.0.5:7000"))
            .isEqualTo(new InetSocketAddress("10.0.0.5", 7000));
        assertThat(FabricMessages.rdmaEndpoint("[fe80::1:2]:7000").getAddress().getHostAddress())
            .startsWith("fe80:0:0:0:0:0:1:2");
        assertThat(FabricMessages.rdmaEndpoint("[::1]:1").getPort()).isEqualTo(1);
        assertThat(FabricMessages.rdmaText(FabricMessages.rdmaEndpoint("[fe80::1]:7000"))).isEqualTo("[fe80:0:0:0:0:0:0:1]:7000");
        final byte[] nonce = FabricMessages.random(16);
        for (final String hostile : List.of("rdma.example.com:7000", "localhost:7000", "10.0.0.5:7000?polling=busy#",
            "10.0.0.5:7000#x", "10.0.0.5", "10.0.0.5:0", "10.0.0.5:70000", "10.0.0.256:7000", "010.0.0.5:7000",
            "10.0.0:7000", "[fe80::1%eth0]:7000", "[1::2::3]:7000", "[::ffff:10.0.0.5]:7000", "fe80::1:7000",
            "10.0.0.5:+700", ":7000", "[]:7000"))
        {
            assertThatThrownBy(() -> FabricMessages.rdmaEndpoint(hostile)).as(hostile)
                .isInstanceOf(IllegalArgumentException.class);
            final FabricMessages.Offer offer = offer();
            offer.rdmaAddress = hostile;
            assertThatThrownBy(() -> FabricMessages.decodeOffer(FabricMessages.offer(offer, nonce, null), nonce, null))
                .as(hostile).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("rdma address");
        }
        final FabricMessages.Offer prefix = offer();
        prefix.rdmaPrefix = 33;
        assertThatThrownBy(() -> FabricMessages.decodeOffer(FabricMessages.offer(prefix, nonce, null), nonce, null))
            .hasMessageContaining("prefix of 33");
    }

    @Test
    void shouldTakeOnlyTheSecretFileOfTheOfferedShmNameAndBoundNamesAndLength()
    {
        final byte[] nonce = FabricMessages.random(16);
        final FabricMessages.Offer other = offer();
        other.secretFile = "fabric-reverb-7001-abcdef.key"; // another server's secret file in the same directory
        assertThatThrownBy(() -> FabricMessages.decodeOffer(FabricMessages.offer(other, nonce, null), nonce, null))
            .hasMessageContaining("is not the one of shm name");
        final FabricMessages.Offer dots = offer();
        dots.shmName = "..";
        dots.secretFile = FabricMessages.secretFileName("..");
        assertThatThrownBy(() -> FabricMessages.decodeOffer(FabricMessages.offer(dots, nonce, null), nonce, null))
            .hasMessageContaining("shm name");
        final FabricMessages.Offer longName = offer();
        longName.shmName = "a".repeat(65);
        longName.secretFile = FabricMessages.secretFileName(longName.shmName);
        assertThatThrownBy(() -> FabricMessages.decodeOffer(FabricMessages.offer(longName, nonce, null), nonce, null))
            .hasMessageContaining("1..64 characters");
        final ByteBuffer huge = ByteBuffer.allocate(FabricMessages.MAX_OFFER_LENGTH + 1)
            .put(FabricMessages.offer(offer(), nonce, null)).position(0);
        assertThatThrownBy(() -> FabricMessages.decodeOffer(huge, nonce, null)).hasMessageContaining("is not of");
    }

    @Test
    void shouldNeverTakeAnRpcFrameForANegotiationMessage()
    {
        // every RPC frame carries protocol version 1 where these messages have their marker
        final ByteBuffer frame = ByteBuffer.allocate(64).order(ByteOrder.LITTLE_ENDIAN);
        frame.putInt(0, FabricMessages.MAGIC);
        frame.put(FrameHeaderFlyweight.VERSION_OFFSET, (byte)FrameHeaderFlyweight.CURRENT_VERSION);
        frame.put(FrameHeaderFlyweight.TYPE_OFFSET, FabricMessages.HELLO);
        assertThat(FabricMessages.type(frame)).isZero();
        assertThat(FabricMessages.type(FabricMessages.hello(FabricMessages.random(16)))).isEqualTo(FabricMessages.HELLO);
        assertThat(FabricMessages.type(ByteBuffer.allocate(3))).isZero();
    }

    @Test
    void shouldMakeRefusalReasonsPrintable()
    {
        final ByteBuffer refused = FabricMessages.refused("no\u0007bell");
        assertThat(FabricMessages.refusedReason(refused)).isEqualTo("no?bell");
        assertThat(FabricMessages.refusedReason(ByteBuffer.allocate(9))).isEqualTo("(malformed refusal)");
        final ByteBuffer lying = FabricMessages.refused("short");
        lying.order(ByteOrder.LITTLE_ENDIAN).putShort(8, (short)200);
        assertThat(FabricMessages.refusedReason(lying)).isEqualTo("(malformed refusal)");
    }

    @Test
    void shouldChooseRdmaOnlyWithTheFabricHereAndACommonSubnet() throws Exception
    {
        final InetAddress server = InetAddress.getByName("10.0.0.5");
        final List<RdmaChoice.Local> onSubnet = List.of(new RdmaChoice.Local(InetAddress.getByName("127.0.0.1"), 8),
            new RdmaChoice.Local(InetAddress.getByName("10.0.0.9"), 24));
        final List<RdmaChoice.Local> elsewhere = List.of(new RdmaChoice.Local(InetAddress.getByName("10.0.1.9"), 24));
        assertThat(RdmaChoice.problem(null, server, 24, onSubnet)).isNull();
        assertThat(RdmaChoice.problem(null, server, 24, elsewhere)).contains("no address of this host")
            .contains("10.0.0.5/24");
        assertThat(RdmaChoice.problem("no RDMA device", server, 24, onSubnet)).contains("no RDMA device");
        assertThat(RdmaChoice.problem(null, server, 0, onSubnet)).contains("did not say the subnet");
        assertThat(RdmaChoice.sameSubnet(server, InetAddress.getByName("10.0.0.200"), 25)).isFalse();
        assertThat(RdmaChoice.sameSubnet(server, InetAddress.getByName("::1"), 8)).as("another family").isFalse();
    }
}
