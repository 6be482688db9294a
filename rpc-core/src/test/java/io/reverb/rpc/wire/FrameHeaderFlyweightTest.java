package io.reverb.rpc.wire;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.reverb.rpc.Metadata;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

class FrameHeaderFlyweightTest
{
    @Test
    void shouldWriteAndReadHeaderFieldsLittleEndian()
    {
        final ByteBuffer buffer = ByteBuffer.allocate(64);
        final FrameHeaderFlyweight header = new FrameHeaderFlyweight().wrap(buffer, 4);
        header.header(40, FrameType.MESSAGE, FrameType.Flags.END_STREAM, 77);
        assertThat(header.frameLength()).isEqualTo(40);
        assertThat(header.version()).isEqualTo(FrameHeaderFlyweight.CURRENT_VERSION);
        assertThat(FrameType.fromValue(header.type())).isEqualTo(FrameType.MESSAGE);
        assertThat(header.flags()).isEqualTo(FrameType.Flags.END_STREAM);
        assertThat(header.streamId()).isEqualTo(77);
        assertThat(buffer.get(4)).isEqualTo((byte)40); // little-endian: low byte first
    }

    @Test
    void shouldHaveStableWireValues()
    {
        assertThat(FrameType.CALL.value()).isEqualTo(1);
        assertThat(FrameType.GOAWAY.value()).isEqualTo(9);
        assertThat(FrameType.fromValue(0)).isNull();
        assertThat(FrameType.fromValue(200)).isNull();
    }

    @Test
    void shouldRoundTripMetadataAndRejectTruncation() throws Exception
    {
        final Metadata md = new Metadata();
        md.put(Metadata.Key.of("a", Metadata.ASCII_STRING_MARSHALLER), "x");
        md.put(Metadata.Key.of("b-bin", Metadata.BINARY_BYTE_MARSHALLER), new byte[]{9, 8});
        final ByteBuffer buffer = FrameCodec.le(ByteBuffer.allocate(FrameCodec.metadataLength(md)));
        assertThat(FrameCodec.putMetadata(buffer, 0, md)).isEqualTo(buffer.capacity());
        final Metadata read = new Metadata();
        assertThat(FrameCodec.getMetadata(buffer, 0, buffer.capacity(), read)).isEqualTo(buffer.capacity());
        assertThat(read.toString()).isEqualTo(md.toString());
        assertThatThrownBy(() -> FrameCodec.getMetadata(buffer, 0, buffer.capacity() - 1, new Metadata()))
            .isInstanceOf(ProtocolException.class);
    }

    @Test
    void shouldTruncateLongDescriptionsOnCharacterBoundary()
    {
        final String text = "\u00e9".repeat(FrameCodec.MAX_DESCRIPTION_BYTES);
        final byte[] utf8 = FrameCodec.utf8(text);
        assertThat(utf8.length).isLessThanOrEqualTo(FrameCodec.MAX_DESCRIPTION_BYTES);
        assertThat(new String(utf8, StandardCharsets.UTF_8)).doesNotContain("\ufffd");
    }
}
