package io.reverb.rpc.protobuf;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.protobuf.ByteString;
import com.google.protobuf.BytesValue;
import com.google.protobuf.Int64Value;
import com.google.protobuf.ListValue;
import com.google.protobuf.Struct;
import com.google.protobuf.Value;
import com.sun.management.ThreadMXBean;
import io.reverb.rpc.Marshaller;
import io.reverb.rpc.RpcException;
import io.reverb.rpc.StatusCode;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * Small messages in direct memory (every message a transport delivers from registered memory) are parsed by a decoder
 * each thread reuses: no {@code CodedInputStream} per message, and nothing of one message (bytes, limits, a failure
 * half-way) reaches the next.
 */
class SmallMessageDecoderTest
{
    private static final int READS = 100_000;

    @Test
    void shouldNotAllocateADecoderPerSmallDirectMessage()
    {
        final Object bean = ManagementFactory.getThreadMXBean();
        Assumptions.assumeTrue(bean instanceof ThreadMXBean,
            "this JVM does not count allocated bytes per thread (com.sun.management.ThreadMXBean)");
        final ThreadMXBean threads = (ThreadMXBean)bean;
        final Marshaller<Int64Value> m = ProtoMarshaller.of(Int64Value.getDefaultInstance());
        final ByteBuffer buffer = encode(m, Int64Value.of(1234567890123L), 3);

        readMany(m, buffer); // warm up: the JIT's escape analysis decides what the builder costs
        final long tid = Thread.currentThread().getId();
        final long before = threads.getThreadAllocatedBytes(tid);
        final long sink = readMany(m, buffer);
        final long perRead = (threads.getThreadAllocatedBytes(tid) - before) / READS;

        assertThat(sink).isEqualTo(1234567890123L * READS);
        // what is left per message: the message itself and its builder (40 bytes each with compressed oops, 80
        // measured); a CodedInputStream per message (an array decoder, 64 bytes) takes it to 144
        assertThat(perRead).as("bytes allocated per parse of an Int64Value from a direct buffer").isLessThanOrEqualTo(104);
    }

    @Test
    void shouldParseEachMessageWholeWhenOneThreadParsesManyInTurn()
    {
        final Marshaller<Struct> m = ProtoMarshaller.of(Struct.getDefaultInstance());
        final Struct[] values = new Struct[40];
        final ByteBuffer buffer = ByteBuffer.allocateDirect(1100);
        for (int i = 0; i < values.length; i++)
        {
            // nested messages (limits pushed and popped), strings and lists of varying length, up to the small bound
            values[i] = Struct.newBuilder()
                .putFields("n" + i, Value.newBuilder().setNumberValue(i * 1.5).build())
                .putFields("s", Value.newBuilder().setStringValue("x".repeat(i * 23)).build())
                .putFields("l", Value.newBuilder().setListValue(ListValue.newBuilder()
                    .addValues(Value.newBuilder().setStructValue(Struct.newBuilder()
                        .putFields("deep", Value.newBuilder().setBoolValue(i % 2 == 0).build())))
                    .addValues(Value.newBuilder().setStringValue("tail" + i))).build())
                .build();
            final int size = m.serializedSize(values[i]);
            assertThat(size).isLessThanOrEqualTo(1024);
            buffer.clear().position(7).limit(7 + size);
            m.write(values[i], buffer);
            buffer.position(7).limit(7 + size);
            assertThat(m.read(buffer)).isEqualTo(values[i]);
            assertThat(buffer.position()).as("the caller's position is left as it was").isEqualTo(7);
        }
    }

    @Test
    void shouldParseCorrectlyAfterAMessageThatFailedHalfWayOnTheSameThread()
    {
        final Marshaller<Struct> m = ProtoMarshaller.of(Struct.getDefaultInstance());
        final Struct value = Struct.newBuilder()
            .putFields("k", Value.newBuilder().setStructValue(Struct.newBuilder()
                .putFields("inner", Value.newBuilder().setStringValue("v").build())).build())
            .build();
        final ByteBuffer whole = encode(m, value, 0);
        // cut inside the nested message: the decoder fails with a limit pushed and part of the message read
        final ByteBuffer cut = ByteBuffer.allocateDirect(whole.remaining() - 3);
        for (int i = 0; i < cut.capacity(); i++)
        {
            cut.put(i, whole.get(i));
        }
        for (int round = 0; round < 3; round++)
        {
            assertThatThrownBy(() -> m.read(cut))
                .isInstanceOf(RpcException.class)
                .satisfies(t -> assertThat(((RpcException)t).status().code()).isEqualTo(StatusCode.INTERNAL));
            assertThat(m.read(whole)).isEqualTo(value);
        }
        final Marshaller<BytesValue> other = ProtoMarshaller.of(BytesValue.getDefaultInstance());
        final BytesValue bytes = BytesValue.of(ByteString.copyFromUtf8("after a failure"));
        assertThat(other.read(encode(other, bytes, 1))).isEqualTo(bytes);
    }

    @Test
    void shouldKeepUnknownFieldsOfASmallDirectMessage() throws Exception
    {
        // a newer peer's field this type does not know: kept, copied out of the reused decoder's array
        final Marshaller<Int64Value> m = ProtoMarshaller.of(Int64Value.getDefaultInstance());
        final Marshaller<BytesValue> newer = ProtoMarshaller.of(BytesValue.getDefaultInstance());
        final BytesValue sent = BytesValue.of(ByteString.copyFromUtf8("unknown to Int64Value"));
        final Int64Value parsed = m.read(encode(newer, sent, 0));
        m.read(encode(m, Int64Value.of(-1), 0)); // the next message overwrites the decoder's array
        assertThat(parsed.getValue()).isZero();
        assertThat(BytesValue.parseFrom(parsed.toByteString())).isEqualTo(sent);
    }

    private static <T> ByteBuffer encode(final Marshaller<T> m, final T value, final int offset)
    {
        final int size = m.serializedSize(value);
        final ByteBuffer buffer = ByteBuffer.allocateDirect(offset + size);
        buffer.position(offset);
        m.write(value, buffer);
        buffer.position(offset);
        return buffer;
    }

    private static long readMany(final Marshaller<Int64Value> m, final ByteBuffer buffer)
    {
        long sink = 0;
        for (int i = 0; i < READS; i++)
        {
            sink += m.read(buffer).getValue();
        }
        return sink;
    }
}
