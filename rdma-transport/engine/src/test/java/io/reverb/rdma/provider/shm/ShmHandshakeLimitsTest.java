package io.reverb.rdma.provider.shm;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/**
 * Issue 13, item 1 on shm://: the socket request parser checks every length against what remains and
 * against its own limit before allocating, and refuses names that could leave the directory.
 */
class ShmHandshakeLimitsTest
{
    private static ByteBuffer message(final int type, final int nameLength, final String name, final int privateLength)
    {
        final ByteBuffer b = ByteBuffer.allocate(512);
        b.putInt(Handshake.MAGIC).putInt(type).putLong(42);
        b.putShort((short)nameLength).put(name.getBytes(StandardCharsets.UTF_8));
        b.putInt(1).putInt(2).putInt(3);
        b.putShort((short)0).putShort((short)0);
        b.putInt(privateLength);
        if (privateLength > 0 && privateLength < 100)
        {
            b.put(new byte[privateLength]);
        }
        b.flip();
        return b;
    }

    @Test
    void shouldRefuseFrameLengthsOutsideTheLimit()
    {
        for (final int length : new int[] {0, -1, Handshake.MAX_FRAME + 1, Integer.MAX_VALUE, Integer.MIN_VALUE})
        {
            assertThatThrownBy(() -> Handshake.bodyLength(ByteBuffer.allocate(4).putInt(0, length)))
                .isInstanceOf(IOException.class).hasMessageContaining("length " + length);
        }
    }

    @Test
    void shouldRefuseNameLengthsBeyondTheLimitOrTheMessage()
    {
        // 0xFFFF read as a short was -1 once: a NegativeArraySizeException.
        assertThatThrownBy(() -> Handshake.decode(message(Handshake.REQUEST, 0xFFFF, "", 0)))
            .isInstanceOf(IOException.class).hasMessageContaining("file name of 65535 bytes");
        assertThatThrownBy(() -> Handshake.decode(message(Handshake.REQUEST, 100, "abc", 0)))
            .isInstanceOf(IOException.class).hasMessageContaining("file name of 100 bytes");
        assertThatThrownBy(() -> Handshake.decode(message(Handshake.REQUEST, 5, "../..", 0)))
            .isInstanceOf(IOException.class).hasMessageContaining("file name '../..'");
    }

    @Test
    void shouldRefusePrivateDataBeyondTheLimitUnknownTypesAndTruncation() throws IOException
    {
        assertThatThrownBy(() -> Handshake.decode(message(Handshake.REQUEST, 3, "abc", 57)))
            .isInstanceOf(IOException.class).hasMessageContaining("private data 57");
        assertThatThrownBy(() -> Handshake.decode(message(Handshake.REQUEST, 3, "abc", 1 << 30)))
            .isInstanceOf(IOException.class).hasMessageContaining("private data");
        assertThatThrownBy(() -> Handshake.decode(message(7, 3, "abc", 0)))
            .isInstanceOf(IOException.class).hasMessageContaining("type 7");
        final ByteBuffer truncated = message(Handshake.REQUEST, 3, "abc", 4);
        truncated.limit(truncated.limit() - 1);
        assertThatThrownBy(() -> Handshake.decode(truncated)).isInstanceOf(IOException.class);
        final Handshake ok = Handshake.decode(message(Handshake.REQUEST, 3, "abc", 4));
        assertThat(ok.prefix).isEqualTo("abc");
        assertThat(ok.privateData).hasSize(4);
    }
}
