package io.reverb.rpc.wire;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.reverb.rpc.Metadata;
import java.nio.ByteBuffer;
import org.junit.jupiter.api.Test;

/** The CALL and STATUS layouts are written and read through the same flyweights. */
class CallAndStatusFlyweightTest
{
    private static final int HEADER = FrameHeaderFlyweight.HEADER_LENGTH;
    private static final Metadata.Key<String> TRACE = Metadata.Key.of("x-trace", Metadata.ASCII_STRING_MARSHALLER);
    private static final Metadata.Key<String> RETRY = Metadata.Key.of("retry-after", Metadata.ASCII_STRING_MARSHALLER);

    @Test
    void shouldReadBackACallWrittenThroughTheFlyweight() throws ProtocolException
    {
        final Metadata metadata = new Metadata();
        metadata.put(TRACE, "abc");
        final int length = CallFlyweight.frameLength("pkg.Svc/Do", metadata);
        final ByteBuffer buffer = ByteBuffer.allocate(length + 8);
        final int end = new CallFlyweight().wrap(buffer, 4 + HEADER).timeoutNanos(1234).initialRequestN(7)
            .method("pkg.Svc/Do").metadata(metadata);
        assertThat(end).isEqualTo(4 + length);

        final CallFlyweight call = new CallFlyweight().wrap(buffer, 4 + HEADER).validate(end);
        assertThat(call.timeoutNanos()).isEqualTo(1234);
        assertThat(call.initialRequestN()).isEqualTo(7);
        assertThat(call.method()).isEqualTo("pkg.Svc/Do");
        final Metadata read = new Metadata();
        FrameCodec.getMetadata(buffer, call.metadataOffset(), end, read);
        assertThat(read.get(TRACE)).isEqualTo("abc");
    }

    @Test
    void shouldRejectACallWhoseMethodNameDoesNotFit()
    {
        final ByteBuffer buffer = ByteBuffer.allocate(64);
        new CallFlyweight().wrap(buffer, 0).timeoutNanos(-1).initialRequestN(1).method("a/b");
        assertThatThrownBy(() -> new CallFlyweight().wrap(buffer, 0).validate(CallFlyweight.METHOD_OFFSET + 2))
            .isInstanceOf(ProtocolException.class).hasMessageContaining("method name");
        assertThatThrownBy(() -> new CallFlyweight().wrap(buffer, 0).validate(10))
            .isInstanceOf(ProtocolException.class).hasMessageContaining("truncated");
    }

    @Test
    void shouldReadBackAStatusWithAndWithoutDescription() throws ProtocolException
    {
        final Metadata trailers = new Metadata();
        trailers.put(RETRY, "5");
        final byte[] description = FrameCodec.utf8("not today");
        final ByteBuffer buffer = ByteBuffer.allocate(256);
        final int end = new StatusFlyweight().wrap(buffer, HEADER).code(14).descriptionAndTrailers(description, trailers);
        assertThat(end).isEqualTo(StatusFlyweight.frameLength(description, trailers));

        final StatusFlyweight status = new StatusFlyweight().wrap(buffer, HEADER).validate(end);
        assertThat(status.code()).isEqualTo(14);
        assertThat(status.description(end)).isEqualTo("not today");
        final Metadata read = new Metadata();
        FrameCodec.getMetadata(buffer, status.trailersOffset(end), end, read);
        assertThat(read.get(RETRY)).isEqualTo("5");

        final int bare = new StatusFlyweight().wrap(buffer, HEADER).code(0).descriptionAndTrailers(null, null);
        assertThat(status.description(bare)).isNull();
        assertThat(status.trailersOffset(bare)).isEqualTo(HEADER + StatusFlyweight.DESCRIPTION_OFFSET);
    }
}
