package io.reverb.rpc.protobuf;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.ByteString;
import com.google.protobuf.BytesValue;
import io.reverb.rpc.Marshaller;
import java.io.InputStream;
import java.lang.reflect.Field;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The default marshaller's arrays allocated ahead of time ({@link ProtoMarshaller#prepareIdle()},
 * {@link FreshChunks}): made only on a thread that read a large message, as many as it took, used by the next one,
 * and never given to two messages: a message read earlier, and every view of it kept after the message was dropped,
 * keeps its bytes however many messages follow.
 */
class FreshChunksTest
{
    private static final int CHUNK = LargeFieldSplitter.CHUNK;

    @BeforeEach
    @AfterEach
    void clearThisThreadsStash()
    {
        FreshChunks.clear();
    }

    @Test
    void shouldPrepareNothingOnAThreadThatReadNoLargeMessage()
    {
        final Marshaller<BytesValue> m = ProtoMarshaller.of(BytesValue.getDefaultInstance());
        read(m, BytesValue.of(pattern(CHUNK, 1))); // one chunk: not split, not large enough

        assertThat(ProtoMarshaller.prepareIdle()).isFalse();
        assertThat(FreshChunks.ready()).isZero();
    }

    @Test
    void shouldPrepareAsManyArraysAsTheLastLargeMessageTookAndHandThemToTheNext()
    {
        final Marshaller<BytesValue> m = ProtoMarshaller.of(BytesValue.getDefaultInstance());
        final int size = 4 * CHUNK + 5; // four full pieces and a short one, which is always allocated on the spot
        read(m, BytesValue.of(pattern(size, 1)));
        assertThat(FreshChunks.ready()).isZero();

        int prepared = 0;
        while (ProtoMarshaller.prepareIdle())
        {
            prepared++;
        }
        assertThat(prepared).isEqualTo(4);
        assertThat(FreshChunks.ready()).isEqualTo(4);

        final BytesValue next = read(m, BytesValue.of(pattern(size, 2)));
        assertThat(FreshChunks.ready()).isZero(); // all four taken by the next message
        assertThat(next.getValue()).isEqualTo(pattern(size, 2));
        assertThat(next.getValue().asReadOnlyByteBufferList()).hasSize(5);
    }

    @Test
    void shouldCapThePreparedArraysPerThread()
    {
        final Marshaller<BytesValue> m = ProtoMarshaller.of(BytesValue.getDefaultInstance());
        read(m, BytesValue.of(pattern((FreshChunks.MAX_CHUNKS + 3) * CHUNK, 1)));
        int prepared = 0;
        while (ProtoMarshaller.prepareIdle())
        {
            prepared++;
        }
        assertThat(prepared).isEqualTo(FreshChunks.MAX_CHUNKS);
    }

    @Test
    void shouldNeverGiveAnArrayToTwoMessagesNorChangeAHeldMessageOrItsViews() throws Exception
    {
        final Marshaller<BytesValue> m = ProtoMarshaller.of(BytesValue.getDefaultInstance());
        final int size = 4 * CHUNK;
        final Set<byte[]> seen = Collections.newSetFromMap(new IdentityHashMap<>());

        read(m, BytesValue.of(pattern(size, 0))); // this thread now prepares four arrays when idle
        while (ProtoMarshaller.prepareIdle())
        {
            // as an idle poller does
        }
        BytesValue first = read(m, BytesValue.of(pattern(size, 1))); // made of prepared arrays
        final byte[] expected = pattern(size, 1).toByteArray();
        seen.addAll(leafArrays(first.getValue()));
        assertThat(seen).hasSize(4);
        // views of the field that reference its arrays but neither the message nor the field
        final ByteString withinPiece = first.getValue().substring(7, 300); // a bounded string over the first array
        final ByteString acrossPieces = first.getValue().substring(CHUNK - 10, CHUNK + 10);
        final List<ByteBuffer> buffers = first.getValue().asReadOnlyByteBufferList();
        final InputStream input = first.getValue().substring(2 * CHUNK).newInput();
        assertThat(input.read()).isEqualTo(expected[2 * CHUNK] & 0xFF);
        first = null; // the message and its field are garbage from here on; only the views are held

        for (int i = 0; i < 8; i++)
        {
            while (ProtoMarshaller.prepareIdle())
            {
                // prepare all the next message takes, as an idle poller does
            }
            assertThat(FreshChunks.ready()).isEqualTo(4);
            System.gc(); // give a collector every chance to free whatever is unreachable (nothing may come back)
            final BytesValue next = read(m, BytesValue.of(pattern(size, 10 + i)));
            assertThat(next.getValue()).isEqualTo(pattern(size, 10 + i));
            for (final byte[] array : leafArrays(next.getValue()))
            {
                assertThat(seen.add(array)).as("array of message %d already given to an earlier message", i).isTrue();
            }
            assertThat(withinPiece.toByteArray()).isEqualTo(Arrays.copyOfRange(expected, 7, 300));
        }

        assertThat(first).isNull();
        assertThat(withinPiece.toByteArray()).isEqualTo(Arrays.copyOfRange(expected, 7, 300));
        assertThat(acrossPieces.toByteArray()).isEqualTo(Arrays.copyOfRange(expected, CHUNK - 10, CHUNK + 10));
        final ByteBuffer all = ByteBuffer.allocate(size);
        for (final ByteBuffer buffer : buffers)
        {
            all.put(buffer.duplicate());
        }
        assertThat(all.array()).isEqualTo(expected);
        assertThat(input.readAllBytes()).isEqualTo(Arrays.copyOfRange(expected, 2 * CHUNK + 1, size));
    }

    private static BytesValue read(final Marshaller<BytesValue> m, final BytesValue sent)
    {
        final ByteBuffer registered = ByteBuffer.allocateDirect(m.serializedSize(sent));
        m.write(sent, registered);
        registered.flip();
        final BytesValue received = m.read(registered);
        for (int i = 0; i < registered.capacity(); i++)
        {
            registered.put(i, (byte)0xDB); // the transport reuses its buffer
        }
        return received;
    }

    /** The arrays a rope's leaves wrap (protobuf internals, read by reflection: no public API exposes them). */
    private static List<byte[]> leafArrays(final ByteString value) throws ReflectiveOperationException
    {
        final List<byte[]> arrays = new ArrayList<>();
        collect(value, arrays);
        return arrays;
    }

    private static void collect(final ByteString value, final List<byte[]> arrays) throws ReflectiveOperationException
    {
        if (value.getClass().getSimpleName().equals("RopeByteString"))
        {
            collect((ByteString)field(value, "left"), arrays);
            collect((ByteString)field(value, "right"), arrays);
            return;
        }
        arrays.add((byte[])field(value, "bytes"));
    }

    private static Object field(final Object target, final String name) throws ReflectiveOperationException
    {
        for (Class<?> c = target.getClass(); c != null; c = c.getSuperclass())
        {
            try
            {
                final Field f = c.getDeclaredField(name);
                f.setAccessible(true);
                return f.get(target);
            }
            catch (final NoSuchFieldException e)
            {
                // look in the superclass
            }
        }
        throw new NoSuchFieldException(name + " in " + target.getClass());
    }

    private static ByteString pattern(final int length, final int seed)
    {
        final byte[] bytes = new byte[length];
        for (int i = 0; i < length; i++)
        {
            bytes[i] = (byte)(i * 31 + seed);
        }
        return ByteString.copyFrom(bytes);
    }
}
