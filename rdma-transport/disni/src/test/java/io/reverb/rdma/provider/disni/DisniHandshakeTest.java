package io.reverb.rdma.provider.disni;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/** The TCP frames that carry what DiSNi 2.1 cannot carry through rdma_cm. */
class DisniHandshakeTest
{
    private final ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    private final DataOutputStream out = new DataOutputStream(bytes);

    @Test
    void shouldCarryRequestPrivateData() throws IOException
    {
        Handshake.writeRequest(out, ByteBuffer.wrap("hello".getBytes(StandardCharsets.US_ASCII)));

        final Handshake.Message message = Handshake.read(in(), Handshake.REQUEST);

        assertThat(text(message.privateData())).isEqualTo("hello");
    }

    @Test
    void shouldCarryOfferWithRdmaCmAddressAndAcceptWithPrivateData() throws IOException
    {
        final ByteBuffer data = ByteBuffer.allocate(56);
        for (int i = 0; i < 56; i++)
        {
            data.put((byte)i);
        }
        data.flip().position(6);
        Handshake.writeOffer(out, new InetSocketAddress(InetAddress.getByAddress(new byte[] {10, 0, 1, 5}), 40_123));
        Handshake.writeAccept(out, data);

        final DataInputStream in = in();
        final Handshake.Message offer = Handshake.read(in, Handshake.OFFER);
        final Handshake.Message message = Handshake.read(in, Handshake.ACCEPT);

        assertThat(offer.rdmaPort()).isEqualTo(40_123);
        assertThat(offer.rdmaCmAddress().getAddress().getHostAddress()).isEqualTo("10.0.1.5");
        assertThat(message.privateData().remaining()).isEqualTo(50);
        assertThat(message.privateData().get(0)).isEqualTo((byte)6);
        assertThat(data.position()).as("caller's buffer untouched").isEqualTo(6);
    }

    @Test
    void shouldCarryRejectWithPrivateDataAndEmptyWhenNull() throws IOException
    {
        Handshake.writeReject(out, ByteBuffer.wrap(new byte[] {9, 8}));
        Handshake.writeReject(out, null);

        final DataInputStream in = in();
        assertThat(Handshake.read(in, Handshake.REJECT).privateData().remaining()).isEqualTo(2);
        assertThat(Handshake.read(in, Handshake.REJECT).privateData().remaining()).isZero();
    }

    @Test
    void shouldCarryRdmaCmSource() throws IOException
    {
        Handshake.writeSource(out, new InetSocketAddress("10.1.2.3", 51_234));

        final InetSocketAddress source = Handshake.read(in(), Handshake.SOURCE).source();

        assertThat(DisniAddress.format(source)).isEqualTo("10.1.2.3:51234");
    }

    @Test
    void shouldRefusePrivateDataLongerThanRdmaCmAllows()
    {
        assertThatThrownBy(() -> Handshake.writeRequest(out, ByteBuffer.allocate(57)))
            .isInstanceOf(IllegalArgumentException.class)
            .hasMessageContaining("at most 56");
    }

    @Test
    void shouldRejectForeignPeersAndUnexpectedFrames() throws IOException
    {
        out.writeInt(0x47455420);
        out.writeInt(0);
        assertThatThrownBy(() -> Handshake.read(in())).hasMessageContaining("not a Reverb rdma:// handshake");

        bytes.reset();
        Handshake.writeReject(out, null);
        assertThatThrownBy(() -> Handshake.read(in(), Handshake.ACCEPT)).hasMessageContaining("expected frame type");
    }

    private DataInputStream in()
    {
        return new DataInputStream(new ByteArrayInputStream(bytes.toByteArray()));
    }

    private static String text(final ByteBuffer buffer)
    {
        final byte[] array = new byte[buffer.remaining()];
        buffer.duplicate().get(array);
        return new String(array, StandardCharsets.US_ASCII);
    }
}
