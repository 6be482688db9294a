package io.reverb.rdma.rpc;

import static org.assertj.core.api.Assertions.assertThat;

import com.code_intelligence.jazzer.junit.FuzzTest;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;

/**
 * Fuzz targets for the {@code reverb://} negotiation messages a peer sends (issue 38): an OFFER as a client decodes
 * it, and a HELLO, CLAIM or REFUSED as either side reads it. Regression mode runs the checked-in corpus in
 * {@code mvn verify}; see FUZZING.md at the repository root to fuzz one for minutes.
 *
 * <p>What must hold: an offer is refused with an IllegalArgumentException, or every field the client will use is
 * safe: known fabric bits, shm names that cannot leave the directory and a secret file that is the shm name's own,
 * an rdma address that is a literal IP and port (nothing to resolve, no query or fragment). A claim of any bytes
 * never verifies under a key it was not made with; a refusal's reason is printable and bounded.
 */
class FabricMessagesFuzzTest
{
    private static final byte[] NONCE = new byte[FabricMessages.NONCE_LENGTH];
    private static final byte[] TOKEN = "fuzz-token-0123456789abcdef".getBytes(StandardCharsets.US_ASCII);

    @FuzzTest
    void offerDecodes(final byte[] input)
    {
        final FabricMessages.Offer offer;
        try
        {
            offer = FabricMessages.decodeOffer(ByteBuffer.wrap(input), NONCE, null);
        }
        catch (final IllegalArgumentException expected)
        {
            return;
        }
        assertThat(input.length).isLessThanOrEqualTo(FabricMessages.MAX_OFFER_LENGTH);
        assertThat(offer.fabrics & ~(FabricMessages.FABRIC_SHM | FabricMessages.FABRIC_RDMA)).isZero();
        if (offer.offers(FabricMessages.FABRIC_SHM))
        {
            for (final String name : new String[] {offer.shmName, offer.secretFile})
            {
                assertThat(name).isNotEmpty().hasSizeLessThanOrEqualTo(64).doesNotContain("/").doesNotStartWith(".");
            }
            assertThat(offer.secretFile).isEqualTo(FabricMessages.secretFileName(offer.shmName));
        }
        if (offer.offers(FabricMessages.FABRIC_RDMA))
        {
            assertThat(offer.rdmaAddress).doesNotContain("?").doesNotContain("#").doesNotContain("/");
            // parses again without a lookup, to the same text: a literal
            assertThat(FabricMessages.rdmaEndpoint(offer.rdmaAddress).getPort()).isBetween(1, 65535);
        }
        // without this side's token the same bytes are no offer at all, unless made with it
        try
        {
            FabricMessages.decodeOffer(ByteBuffer.wrap(input), NONCE, TOKEN);
            throw new AssertionError("an offer of fuzzed bytes verified under a token");
        }
        catch (final IllegalArgumentException expected)
        {
            // the proof does not verify
        }
    }

    @FuzzTest
    void negotiationMessagesDecode(final byte[] input)
    {
        final ByteBuffer message = ByteBuffer.wrap(input);
        final byte type = FabricMessages.type(message);
        assertThat(message.position()).isZero();
        final byte[] nonce = FabricMessages.helloNonce(message);
        if (nonce != null)
        {
            assertThat(input).hasSize(FabricMessages.HELLO_LENGTH);
        }
        final FabricMessages.Claim claim = FabricMessages.decodeClaim(message);
        if (claim != null)
        {
            assertThat(input).hasSize(FabricMessages.CLAIM_LENGTH);
            assertThat(FabricMessages.claimVerifies(claim, TOKEN)).as("a claim of fuzzed bytes").isFalse();
            assertThat(FabricMessages.claimedVerifies(message, claim.ticket(), claim.nonce(), TOKEN)).isFalse();
        }
        if (type == FabricMessages.REFUSED)
        {
            final String reason = FabricMessages.refusedReason(message);
            assertThat(reason.length()).isLessThanOrEqualTo(FabricMessages.MAX_STRING);
            assertThat(reason.chars().allMatch(c -> c >= 0x20 && c <= 0x7E)).isTrue();
        }
    }
}
