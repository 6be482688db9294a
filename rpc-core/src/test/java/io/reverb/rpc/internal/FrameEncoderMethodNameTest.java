package io.reverb.rpc.internal;

import static org.assertj.core.api.Assertions.assertThat;

import io.reverb.rpc.wire.CallFlyweight;
import io.reverb.rpc.wire.FrameCodec;
import io.reverb.rpc.wire.FrameHeaderFlyweight;
import java.nio.ByteBuffer;
import org.junit.jupiter.api.Test;

/**
 * The connection's encoder keeps the last method name's bytes: a CALL of another method in between, a name of another
 * length, and a name equal in content but another String object each write their own name, never the kept one.
 */
class FrameEncoderMethodNameTest
{
    private final FrameEncoder encoder = new FrameEncoder();
    private final ByteBuffer buffer = FrameCodec.le(ByteBuffer.allocateDirect(4096));

    private String encodeAndRead(final String method)
    {
        final int end = encoder.call(buffer, 0, 1, method, -1, 1, null);
        assertThat(end).isEqualTo(CallFlyweight.frameLength(method, null));
        return new CallFlyweight().wrap(buffer, FrameHeaderFlyweight.HEADER_LENGTH).method();
    }

    @Test
    void shouldWriteEachCallsOwnMethodName()
    {
        final String[] methods = {"pkg.A/Get", "pkg.B/PutMany", "pkg.A/Get", "p.C/X", "pkg.B/PutMany",
            new String("pkg.A/Get".toCharArray())};
        int written = 0;
        for (int round = 0; round < 3; round++)
        {
            for (final String method : methods)
            {
                assertThat(encodeAndRead(method)).isEqualTo(method);
                written++;
            }
        }
        assertThat(written).isEqualTo(18);
    }
}
