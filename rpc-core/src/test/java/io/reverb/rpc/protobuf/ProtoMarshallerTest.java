package io.reverb.rpc.protobuf;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.protobuf.ByteString;
import com.google.protobuf.BytesValue;
import com.google.protobuf.StringValue;
import io.reverb.rpc.Marshaller;
import io.reverb.rpc.RpcException;
import io.reverb.rpc.StatusCode;
import java.nio.ByteBuffer;
import java.util.Arrays;
import org.junit.jupiter.api.Test;

class ProtoMarshallerTest
{
    @Test
    void shouldWriteExactlySerializedSizeAtPositionOfDirectBuffer()
    {
        final Marshaller<StringValue> m = ProtoMarshaller.of(StringValue.getDefaultInstance());
        final StringValue value = StringValue.of("héllo");
        final int size = m.serializedSize(value);
        final ByteBuffer buffer = ByteBuffer.allocateDirect(size + 20);
        buffer.position(7).limit(7 + size);
        m.write(value, buffer);
        assertThat(buffer.position()).isEqualTo(7 + size);
        buffer.position(7).limit(7 + size);
        assertThat(m.read(buffer)).isEqualTo(value);
    }

    @Test
    void shouldWriteCorrectlyAfterAFailedWriteOnTheSameThread()
    {
        final Marshaller<BytesValue> m = ProtoMarshaller.of(BytesValue.getDefaultInstance());
        final BytesValue first = BytesValue.of(ByteString.copyFrom(new byte[]{9, 9, 9, 9, 9, 9, 9, 9}));
        final ByteBuffer tooSmall = ByteBuffer.allocateDirect(m.serializedSize(first) - 3);
        assertThatThrownBy(() -> m.write(first, tooSmall))
            .isInstanceOfSatisfying(RpcException.class, e -> assertThat(e.status().code()).isEqualTo(StatusCode.INTERNAL));
        // the reused per-thread encoder must not carry bytes of the failed write into the next one
        for (int i = 0; i < 3; i++)
        {
            final BytesValue value = BytesValue.of(ByteString.copyFrom(new byte[]{1, 2, (byte)i}));
            final ByteBuffer buffer = ByteBuffer.allocateDirect(m.serializedSize(value));
            m.write(value, buffer);
            assertThat(buffer.position()).isEqualTo(buffer.capacity());
            buffer.flip();
            assertThat(m.read(buffer)).isEqualTo(value);
        }
    }

    @Test
    void shouldWriteCorrectlyAfterAFailedWriteOnceTheThreadOwnsTheMarshallersEncoder()
    {
        final Marshaller<BytesValue> m = ProtoMarshaller.of(BytesValue.getDefaultInstance());
        // enough writes for this thread's encoder to take the marshaller's own field (after 64 misses)
        for (int i = 0; i < 200; i++)
        {
            assertRoundTrip(m, BytesValue.of(ByteString.copyFrom(new byte[]{3, (byte)i})));
        }
        final BytesValue first = BytesValue.of(ByteString.copyFrom(new byte[]{9, 9, 9, 9, 9, 9, 9, 9}));
        final ByteBuffer tooSmall = ByteBuffer.allocateDirect(m.serializedSize(first) - 3);
        assertThatThrownBy(() -> m.write(first, tooSmall)).isInstanceOf(RpcException.class);
        // the owned encoder is the same object as the thread-local one: reset, not left with the failed bytes
        for (int i = 0; i < 3; i++)
        {
            assertRoundTrip(m, BytesValue.of(ByteString.copyFrom(new byte[]{1, 2, (byte)i})));
        }
    }

    @Test
    void shouldNeverShareAnEncoderBetweenThreadsThatUseOneMarshaller() throws Exception
    {
        final Marshaller<BytesValue> m = ProtoMarshaller.of(BytesValue.getDefaultInstance());
        final int perThread = 20_000;
        final Throwable[] failures = new Throwable[2];
        final Thread[] threads = new Thread[2];
        for (int t = 0; t < threads.length; t++)
        {
            final int id = t;
            threads[t] = new Thread(() ->
            {
                try
                {
                    for (int i = 0; i < perThread; i++)
                    {
                        // each thread's bytes differ from the other's: a shared encoder would mix them
                        final byte[] bytes = new byte[1 + (i % 40)];
                        Arrays.fill(bytes, (byte)(id == 0 ? i : -i - 1));
                        assertRoundTrip(m, BytesValue.of(ByteString.copyFrom(bytes)));
                    }
                }
                catch (final Throwable e)
                {
                    failures[id] = e;
                }
            }, "marshaller-user-" + t);
        }
        for (final Thread thread : threads)
        {
            thread.start();
        }
        for (final Thread thread : threads)
        {
            thread.join();
        }
        assertThat(failures).containsOnlyNulls();
    }

    private static void assertRoundTrip(final Marshaller<BytesValue> m, final BytesValue value)
    {
        final ByteBuffer buffer = ByteBuffer.allocateDirect(m.serializedSize(value));
        m.write(value, buffer);
        assertThat(buffer.position()).isEqualTo(buffer.capacity());
        buffer.flip();
        assertThat(m.read(buffer)).isEqualTo(value);
    }

    @Test
    void shouldKeepParsedValuesIntactWhenTheNextMessageIsParsedOnTheSameThread()
    {
        final Marshaller<BytesValue> m = ProtoMarshaller.of(BytesValue.getDefaultInstance());
        final BytesValue[] values = {
            BytesValue.of(ByteString.copyFromUtf8("first")),
            BytesValue.of(ByteString.copyFromUtf8("second, longer")),
            BytesValue.of(ByteString.copyFrom(new byte[5000]).concat(ByteString.copyFromUtf8("large tail"))),
            BytesValue.of(ByteString.copyFromUtf8("x"))};
        final BytesValue[] parsed = new BytesValue[values.length];
        for (int i = 0; i < values.length; i++)
        {
            final ByteBuffer buffer = ByteBuffer.allocateDirect(m.serializedSize(values[i]) + 5);
            buffer.position(5);
            m.write(values[i], buffer);
            buffer.flip().position(5);
            parsed[i] = m.read(buffer);
            for (int j = 0; j < buffer.capacity(); j++)
            {
                buffer.put(j, (byte)0x5a); // the transport reuses the slot
            }
        }
        assertThat(parsed).containsExactly(values);
    }

    @Test
    void shouldNotAliasSourceBufferWhenParsingBytes()
    {
        final Marshaller<BytesValue> m = ProtoMarshaller.of(BytesValue.getDefaultInstance());
        final BytesValue value = BytesValue.of(ByteString.copyFrom(new byte[]{1, 2, 3, 4}));
        final ByteBuffer buffer = ByteBuffer.allocateDirect(m.serializedSize(value));
        m.write(value, buffer);
        buffer.flip();
        final BytesValue parsed = m.read(buffer);
        // the transport reuses its memory after the callback: the parsed message must not see that
        for (int i = 0; i < buffer.capacity(); i++)
        {
            buffer.put(i, (byte)0);
        }
        assertThat(parsed).isEqualTo(value);
    }

    @Test
    void shouldNotAliasHeapSourceBufferWhenParsingBytes()
    {
        final Marshaller<BytesValue> m = ProtoMarshaller.of(BytesValue.getDefaultInstance());
        final BytesValue value = BytesValue.of(ByteString.copyFrom(new byte[1000]).concat(ByteString.copyFromUtf8("tail")));
        final ByteBuffer buffer = ByteBuffer.allocate(m.serializedSize(value) + 3);
        buffer.position(3);
        m.write(value, buffer);
        buffer.flip().position(3);
        final BytesValue parsed = m.read(buffer);
        Arrays.fill(buffer.array(), (byte)7);
        assertThat(parsed).isEqualTo(value);
    }

    @Test
    void shouldFailWithInternalOnGarbage()
    {
        final Marshaller<StringValue> m = ProtoMarshaller.of(StringValue.getDefaultInstance());
        assertThatThrownBy(() -> m.read(ByteBuffer.wrap(new byte[]{(byte)0xFF, (byte)0xFF, (byte)0xFF})))
            .isInstanceOf(RpcException.class)
            .satisfies(t -> assertThat(((RpcException)t).status().code()).isEqualTo(StatusCode.INTERNAL));
    }

    @Test
    void shouldForgetTheOldestLentArraysBeyondItsBoundInsteadOfKeepingUnreleasedMessagesForever()
    {
        final ProtoMarshaller<BytesValue> m =
            (ProtoMarshaller<BytesValue>)ProtoMarshaller.aliasing(BytesValue.getDefaultInstance());
        final BytesValue value = BytesValue.of(ByteString.copyFrom(new byte[256 * 1024 - 16]));
        final ByteBuffer buffer = ByteBuffer.allocateDirect(m.serializedSize(value));
        m.write(value, buffer);
        final int perArray = ProtoMarshaller.LendingPool.sizeClass(buffer.capacity());
        final long bound = ProtoMarshaller.MAX_LENT_BYTES / perArray;
        BytesValue first = null;
        BytesValue last = null;
        for (int i = 0; i < bound + 50; i++)
        {
            buffer.clear();
            last = m.read(buffer);
            first = first == null ? last : first;
        }
        // never released (a cancelled call): remembered only up to the bound, the oldest forgotten
        assertThat((long)m.lentArrays()).isEqualTo(bound);
        m.release(first);
        assertThat((long)m.lentArrays()).isEqualTo(bound);
        m.release(last);
        assertThat((long)m.lentArrays()).isEqualTo(bound - 1);
        assertThat(first).isEqualTo(value);
    }

    @Test
    void shouldPoisonTheArraysOfThePoisoningMarshallerOnly()
    {
        final ProtoMarshaller<BytesValue> poisoning =
            (ProtoMarshaller<BytesValue>)ProtoMarshaller.aliasing(BytesValue.getDefaultInstance(), true);
        final ProtoMarshaller<BytesValue> plain =
            (ProtoMarshaller<BytesValue>)ProtoMarshaller.aliasing(BytesValue.getDefaultInstance());
        assertThat(poisoning.poisonsReleasedArrays()).isTrue();
        assertThat(plain.poisonsReleasedArrays()).isFalse();
        final byte[] bytes = new byte[ProtoMarshaller.LEND_THRESHOLD * 2];
        Arrays.fill(bytes, (byte)5);
        final BytesValue value = BytesValue.of(ByteString.copyFrom(bytes));
        final ByteBuffer buffer = ByteBuffer.allocateDirect(plain.serializedSize(value));
        plain.write(value, buffer);

        final BytesValue fromPlain = plain.read(buffer.clear());
        final BytesValue fromPoisoning = poisoning.read(buffer.clear());
        assertThat(plain.lentArrays()).isEqualTo(1);
        assertThat(poisoning.lentArrays()).isEqualTo(1);
        plain.release(fromPlain);
        poisoning.release(fromPoisoning);

        // read beyond their lifetime on purpose (nothing took the arrays again): only the poisoning one was filled
        assertThat(fromPlain.getValue().byteAt(bytes.length / 2)).isEqualTo((byte)5);
        assertThat(fromPoisoning.getValue().byteAt(bytes.length / 2)).isEqualTo((byte)0xDB);
        assertThat(plain.lentArrays()).isZero();
        assertThat(poisoning.lentArrays()).isZero();
    }
}
