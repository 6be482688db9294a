package io.reverb.rdma.provider.disni;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import org.junit.jupiter.api.Test;

/**
 * Issue 13, item 1 on rdma://: what a peer's handshake frame announces is checked before it is read or
 * used (private data length, ports), and a truncated frame is an IOException, not a hang or a bigger read.
 */
class DisniHandshakeLimitsTest
{
    private static DataInputStream frame(final int type, final byte[] tail) throws IOException
    {
        final ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        final DataOutputStream out = new DataOutputStream(bytes);
        out.writeInt(Handshake.MAGIC);
        out.writeByte(Handshake.VERSION);
        out.writeByte(type);
        out.write(tail);
        return new DataInputStream(new ByteArrayInputStream(bytes.toByteArray()));
    }

    @Test
    void shouldRefuseAnnouncedPrivateDataBeyondWhatRdmaCmCarries() throws IOException
    {
        for (final int length : new int[] {57, 255})
        {
            final DataInputStream in = frame(Handshake.REQUEST, new byte[] {(byte)length});
            assertThatThrownBy(() -> Handshake.read(in)).isInstanceOf(IOException.class)
                .hasMessageContaining("private data of " + length + " bytes");
        }
    }

    @Test
    void shouldRefusePortsOutOfRange() throws IOException
    {
        for (final int port : new int[] {-1, 65_536, Integer.MAX_VALUE})
        {
            final DataInputStream in = frame(Handshake.SOURCE,
                new byte[] {127, 0, 0, 1, (byte)(port >>> 24), (byte)(port >>> 16), (byte)(port >>> 8), (byte)port});
            assertThatThrownBy(() -> Handshake.read(in)).isInstanceOf(IOException.class).hasMessageContaining("out of range");
        }
    }

    @Test
    void shouldFailTruncatedFramesWithAnEndOfStream() throws IOException
    {
        final DataInputStream in = frame(Handshake.REQUEST, new byte[] {10, 1, 2});
        assertThatThrownBy(() -> Handshake.read(in)).isInstanceOf(EOFException.class);
        final DataInputStream unknown = frame(42, new byte[0]);
        assertThatThrownBy(() -> Handshake.read(unknown)).hasMessageContaining("unknown rdma:// handshake frame type 42");
    }
}
