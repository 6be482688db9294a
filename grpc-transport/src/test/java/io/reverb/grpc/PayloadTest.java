package io.reverb.grpc;

import com.google.protobuf.ByteString;
import com.google.protobuf.BytesValue;
import io.grpc.Drainable;
import io.grpc.KnownLength;
import io.grpc.MethodDescriptor.Marshaller;
import io.grpc.protobuf.ProtoUtils;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.Random;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A grpc-java message is written into the transport's buffer whole, whatever its size and whatever stream its
 * marshaller made, by each of {@link Payload}'s ways (straight into a buffer with an array; through the per-thread
 * array into registered memory, up to {@link Payload#SCRATCH_LIMIT} and one byte past it; drained or read in pieces
 * above it), and a received message is a stream of its own bytes that stays valid once the transport's buffer is
 * reused, whose array, once grpc-java closed it, carries the next small message this thread receives.
 */
class PayloadTest
{
    private static final int LIMIT = Payload.SCRATCH_LIMIT;
    private static final Marshaller<BytesValue> PROTO = ProtoUtils.marshaller(BytesValue.getDefaultInstance());

    @ParameterizedTest
    @ValueSource(ints = {0, 1, 100, 4096, LIMIT - 8, LIMIT - 3, LIMIT, LIMIT + 1, 65_537, 1 << 20})
    void protobufMessagesShouldArriveWholeInEveryKindOfBuffer(final int size)
    {
        final BytesValue message = BytesValue.of(ByteString.copyFrom(bytes(size)));
        final byte[] expected = message.toByteArray();
        for (final ByteBuffer target : targets(expected.length))
        {
            final InputStream payload = Payload.outbound(PROTO.stream(message));
            assertThat(payload).as("protobuf's stream itself, no object of its own").isInstanceOf(KnownLength.class)
                .isNotInstanceOf(Payload.class);
            assertThat(Payload.lengthOf(payload)).isEqualTo(expected.length);
            assertThat(written(payload, target)).as("%d B into %s", size, target).isEqualTo(expected);
        }
    }

    @ParameterizedTest
    @ValueSource(ints = {0, 1, LIMIT, LIMIT + 1, 3 * LIMIT + 5})
    void streamsOfEveryKindShouldArriveWhole(final int size)
    {
        final byte[] expected = bytes(size);
        for (final ByteBuffer target : targets(size))
        {
            // known length, not drainable, and giving few bytes per read
            assertThat(written(Payload.outbound(new Trickle(expected)), target)).isEqualTo(expected);
            // known length and drainable
            assertThat(written(Payload.outbound(new DrainableStream(expected)), target)).isEqualTo(expected);
            // length unknown: read whole first
            assertThat(written(Payload.outbound(new ByteArrayInputStream(expected)), target)).isEqualTo(expected);
        }
    }

    @Test
    void aMessageLargerThanThePerThreadArrayShouldNotGrowIt()
    {
        final byte[] large = bytes(4 * LIMIT);
        final ByteBuffer direct = ByteBuffer.allocateDirect(large.length);
        assertThat(written(Payload.outbound(new Trickle(large)), direct)).isEqualTo(large);
        // the next small message still goes through (the array is reused, not replaced by a larger one)
        final byte[] small = bytes(10);
        assertThat(written(Payload.outbound(new Trickle(small)), ByteBuffer.allocateDirect(10))).isEqualTo(small);
    }

    @Test
    void aReceivedMessageShouldBeAKnownLengthStreamOfItsOwnBytes() throws IOException
    {
        final byte[] sent = BytesValue.of(ByteString.copyFrom(bytes(300))).toByteArray();
        // the transport reposts its buffer: the message must not change
        final Payload received = received(sent);
        final InputStream stream = received;
        assertThat(stream).isInstanceOf(KnownLength.class);
        assertThat(received.length()).isEqualTo(sent.length);
        assertThat(stream.available()).isEqualTo(sent.length);
        assertThat(PROTO.parse(stream).getValue().toByteArray()).isEqualTo(bytes(300));
        assertThat(stream.available()).isZero();
        assertThat(stream.read()).isEqualTo(-1);
        assertThat(stream.read(new byte[4], 0, 4)).isEqualTo(-1);
    }

    @Test
    void aReceivedMessageShouldReadLikeAnyStream() throws IOException
    {
        final byte[] sent = {1, 2, (byte)0xff, 4, 5, 6};
        final InputStream stream = Payload.MARSHALLER.read(ByteBuffer.wrap(sent));
        assertThat(stream.read()).isEqualTo(1);
        assertThat(stream.skip(1)).isEqualTo(1);
        assertThat(stream.read()).isEqualTo(0xff);
        assertThat(stream.read(new byte[0], 0, 0)).isZero();
        final byte[] rest = new byte[8];
        assertThat(stream.read(rest, 2, 6)).isEqualTo(3);
        assertThat(Arrays.copyOfRange(rest, 2, 5)).containsExactly(4, 5, 6);
        assertThat(stream.skip(10)).isZero();
        assertThat(stream.read()).isEqualTo(-1);
    }

    @Test
    void anEmptyReceivedMessageShouldParseAsTheDefaultMessage()
    {
        final Payload received = Payload.MARSHALLER.read(ByteBuffer.allocateDirect(0));
        assertThat(received.length()).isZero();
        assertThat(PROTO.parse(received)).isEqualTo(BytesValue.getDefaultInstance());
    }

    @Test
    void aClosedSmallMessagesArrayShouldCarryTheNextMessageReceivedOnThisThread() throws IOException
    {
        final Payload first = received(BytesValue.of(ByteString.copyFrom(bytes(64))).toByteArray());
        final Payload open = received(bytes(20));
        assertThat(open.array()).as("the first is not closed yet").isNotSameAs(first.array());
        final Object array = first.array();
        // as grpc-java does: parse, then close
        final BytesValue parsed = PROTO.parse(first);
        first.close();
        assertThat(first.array()).isNull();
        assertThat(first.available()).as("a closed message reads as ended").isZero();
        assertThat(first.read()).isEqualTo(-1);
        assertThat(first.read(new byte[4], 0, 4)).isEqualTo(-1);

        final byte[] nextBytes = bytes(30);
        final Payload next = received(nextBytes);
        assertThat(next.array()).as("the closed message's array, reused").isSameAs(array);
        assertThat(next.length()).isEqualTo(30);
        assertThat(next.available()).isEqualTo(30);
        assertThat(next.readAllBytes()).isEqualTo(nextBytes);
        // what was parsed from the first is the parser's copy: unchanged
        assertThat(parsed.getValue().toByteArray()).isEqualTo(bytes(64));
        assertThat(open.readAllBytes()).isEqualTo(bytes(20));
    }

    @Test
    void anArrayClosedOnABusyThreadShouldCarryTheNextMessageReceivedOnAnother() throws Exception
    {
        // a blocking stub: the transport's thread receives each response, the caller's thread parses and closes it,
        // and the caller's own slot is already taken by an earlier response
        received(bytes(1));
        received(bytes(1)); // this thread's slot and the shared one are empty now (nothing closes meanwhile)
        final Payload earlier = received(bytes(64));
        final Payload response = received(bytes(64));
        final Object array = response.array();
        final Thread caller = new Thread(() ->
        {
            earlier.close(); // takes the caller thread's own slot
            response.close(); // no room there: shared
        });
        caller.start();
        caller.join();

        final Payload next = received(bytes(50));
        assertThat(next.array()).as("the array closed on the other thread, reused here").isSameAs(array);
        assertThat(next.readAllBytes()).isEqualTo(bytes(50));
        assertThat(received(bytes(50)).array()).as("handed out once").isNotSameAs(array);
    }

    @Test
    void aMessageClosedTwiceShouldGiveItsArrayOnce()
    {
        final Payload once = received(bytes(40));
        final Object array = once.array();
        once.close();
        once.close();
        final Payload first = received(bytes(40));
        final Payload second = received(bytes(40));
        assertThat(first.array()).isSameAs(array);
        assertThat(second.array()).as("not handed out twice").isNotSameAs(array);
    }

    @Test
    void aLargeReceivedMessagesArrayShouldNotBeKept() throws IOException
    {
        final byte[] largeBytes = bytes(Payload.RECYCLE_LIMIT + 1);
        final Payload large = received(largeBytes);
        final Object array = large.array();
        assertThat(large.readAllBytes()).isEqualTo(largeBytes);
        large.close();
        final Payload small = received(bytes(10));
        assertThat(small.array()).isNotSameAs(array);
        assertThat(small.readAllBytes()).isEqualTo(bytes(10));
    }

    @Test
    void closingAnOutboundMessageShouldKeepNothing() throws IOException
    {
        final InputStream sent = Payload.outbound(PROTO.stream(BytesValue.of(ByteString.copyFrom(bytes(50)))));
        sent.close();
        final byte[] expected = BytesValue.of(ByteString.copyFrom(bytes(50))).toByteArray();
        assertThat(written(Payload.outbound(PROTO.stream(BytesValue.of(ByteString.copyFrom(bytes(50))))),
            ByteBuffer.allocateDirect(expected.length))).isEqualTo(expected);
    }

    // ---------------------------------------------------------------- helpers

    /** A message received from a transport's buffer (direct, at an offset), which is then reused. */
    private static Payload received(final byte[] sent)
    {
        final ByteBuffer slot = ByteBuffer.allocateDirect(sent.length + 8);
        slot.position(3);
        slot.put(sent);
        slot.flip().position(3);
        final Payload payload = Payload.MARSHALLER.read(slot);
        slot.clear();
        while (slot.hasRemaining())
        {
            slot.put((byte)0x7f);
        }
        return payload;
    }

    private static ByteBuffer[] targets(final int size)
    {
        // registered memory is direct; a heap buffer has an array (rpc-core's in-process transport); each with the
        // message at an offset inside a larger buffer, as a claimed slot is
        final ByteBuffer direct = ByteBuffer.allocateDirect(size + 16);
        direct.position(7);
        final ByteBuffer heap = ByteBuffer.allocate(size + 16);
        heap.position(7);
        final ByteBuffer slice = ByteBuffer.allocate(size + 32).position(9).slice();
        slice.position(3);
        return new ByteBuffer[] {direct, heap, slice};
    }

    private static byte[] written(final InputStream payload, final ByteBuffer target)
    {
        final int at = target.position();
        // a stale pattern where the message goes, so that a byte not written shows
        for (int i = at; i < target.limit(); i++)
        {
            target.put(i, (byte)0x5a);
        }
        final int length = Payload.lengthOf(payload);
        assertThat(Payload.MARSHALLER.serializedSize(payload)).isEqualTo(length);
        Payload.MARSHALLER.write(payload, target.duplicate());
        final byte[] out = new byte[length];
        target.duplicate().position(at).get(out);
        return out;
    }

    private static byte[] bytes(final int size)
    {
        final byte[] b = new byte[size];
        new Random(size).nextBytes(b);
        return b;
    }

    /** Known length, not drainable, at most 7 bytes per read. */
    private static final class Trickle extends InputStream implements KnownLength
    {
        private final byte[] bytes;
        private int at;

        Trickle(final byte[] bytes)
        {
            this.bytes = bytes;
        }

        @Override
        public int read()
        {
            return at < bytes.length ? bytes[at++] & 0xff : -1;
        }

        @Override
        public int read(final byte[] into, final int offset, final int count)
        {
            if (at == bytes.length)
            {
                return -1;
            }
            final int n = Math.min(Math.min(count, 7), bytes.length - at);
            System.arraycopy(bytes, at, into, offset, n);
            at += n;
            return n;
        }

        @Override
        public int available()
        {
            return bytes.length - at;
        }
    }

    /** Known length and drainable (writes in pieces of 1000 bytes). */
    private static final class DrainableStream extends InputStream implements KnownLength, Drainable
    {
        private final byte[] bytes;
        private int at;

        DrainableStream(final byte[] bytes)
        {
            this.bytes = bytes;
        }

        @Override
        public int drainTo(final OutputStream target) throws IOException
        {
            final int n = bytes.length - at;
            while (at < bytes.length)
            {
                final int piece = Math.min(1000, bytes.length - at);
                target.write(bytes, at, piece);
                at += piece;
            }
            return n;
        }

        @Override
        public int read()
        {
            return at < bytes.length ? bytes[at++] & 0xff : -1;
        }

        @Override
        public int read(final byte[] into, final int offset, final int count)
        {
            if (at == bytes.length)
            {
                return -1;
            }
            final int n = Math.min(count, bytes.length - at);
            System.arraycopy(bytes, at, into, offset, n);
            at += n;
            return n;
        }

        @Override
        public int available()
        {
            return bytes.length - at;
        }
    }
}
