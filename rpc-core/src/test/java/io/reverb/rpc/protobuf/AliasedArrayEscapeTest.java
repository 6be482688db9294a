package io.reverb.rpc.protobuf;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.ByteString;
import com.google.protobuf.BytesValue;
import com.google.protobuf.CodedInputStream;
import com.google.protobuf.ExtensionRegistryLite;
import com.google.protobuf.UnsafeByteOperations;
import java.io.IOException;
import java.io.InputStream;
import java.lang.ref.WeakReference;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Why the default {@link ProtoMarshaller#of} does not lend pooled arrays that a {@code java.lang.ref.Cleaner} gives
 * back once the garbage collector proves the message unreachable: with protobuf-java 4.x a parsed {@code bytes} field
 * that aliases an array hands that array out through objects that reference neither the message nor the field
 * ({@link ByteString#asReadOnlyByteBuffer()}, {@link ByteString#substring(int)}, {@link ByteString#newInput()}). The
 * message and its field can be collected while such a view still reads the array, so a pool keyed on the message's
 * (or the field's) reachability would recycle the array under a view the application still holds. Only the array's
 * own unreachability is proof, and an array the collector has proven unreachable cannot be taken back.
 *
 * <p>The test parses exactly as the aliasing marshaller does ({@code unsafeWrap} + {@code enableAliasing(true)}),
 * lets the message and the field be collected, then overwrites the array (what recycling it would do) and reads the
 * views. If a protobuf release stops aliasing in these views, this test fails: then a reachability-based pool for the
 * default marshaller is worth revisiting (see
 * benchmarks/results/20261202-1610-shmbig/RESULTS.md).
 */
class AliasedArrayEscapeTest
{
    private static final int SIZE = 256 * 1024;
    private static final byte RECYCLED = (byte)0xDB;

    @Test
    void shouldLetViewsOfAnAliasedFieldOutliveTheMessageAndTheField() throws IOException
    {
        final byte[] array = serialized();
        final List<WeakReference<Object>> collectable = new ArrayList<>();
        final Views views = parseAndKeepOnlyViews(array, collectable);

        // The message and its ByteString are gone: a Cleaner registered on either would now have run.
        assertThat(collectUntilCleared(collectable)).as("message and field collected").isTrue();

        // What recycling the array for the next message would do to it:
        Arrays.fill(array, RECYCLED);

        // ...and the application still sees it through what it kept.
        assertThat(views.buffer.get(views.buffer.position() + 100)).isEqualTo(RECYCLED);
        assertThat(views.substring.byteAt(100)).isEqualTo(RECYCLED);
        assertThat((byte)views.input.read()).isEqualTo(RECYCLED);
    }

    @Test
    void shouldNotLetViewsOfACopiedFieldSeeTheParseArray() throws IOException
    {
        // Control: how ProtoMarshaller.of parses from an array it may reuse (aliasing off): the field owns a copy.
        final byte[] array = serialized();
        final CodedInputStream input = CodedInputStream.newInstance(array);
        input.enableAliasing(false);
        final BytesValue message = BytesValue.parser().parseFrom(input, ExtensionRegistryLite.getEmptyRegistry());
        final ByteBuffer view = message.getValue().asReadOnlyByteBuffer();
        Arrays.fill(array, RECYCLED);
        assertThat(view.get(view.position() + 100)).isEqualTo(pattern(100));
    }

    private static byte[] serialized()
    {
        final byte[] payload = new byte[SIZE];
        for (int i = 0; i < SIZE; i++)
        {
            payload[i] = pattern(i);
        }
        return BytesValue.of(ByteString.copyFrom(payload)).toByteArray();
    }

    private static byte pattern(final int i)
    {
        return (byte)(i * 31 + 7);
    }

    /** Parses with aliasing; returns only views of the field, the message and field held weakly in {@code refs}. */
    private static Views parseAndKeepOnlyViews(final byte[] array, final List<WeakReference<Object>> refs)
        throws IOException
    {
        final CodedInputStream input = UnsafeByteOperations.unsafeWrap(array).newCodedInput();
        input.enableAliasing(true);
        final BytesValue message = BytesValue.parser().parseFrom(input, ExtensionRegistryLite.getEmptyRegistry());
        final ByteString field = message.getValue();
        assertThat(field.byteAt(100)).isEqualTo(pattern(100));
        refs.add(new WeakReference<>(message));
        refs.add(new WeakReference<>(field));
        return new Views(field.asReadOnlyByteBuffer(), field.substring(1), field.newInput());
    }

    /** Explicit collections until every reference is cleared; counts attempts, never waits on a clock. */
    private static boolean collectUntilCleared(final List<WeakReference<Object>> refs)
    {
        for (int attempt = 0; attempt < 50; attempt++)
        {
            if (refs.stream().allMatch(ref -> ref.get() == null))
            {
                return true;
            }
            System.gc();
        }
        return refs.stream().allMatch(ref -> ref.get() == null);
    }

    /** What an application may keep of a field: none of these references the message or the ByteString. */
    private record Views(ByteBuffer buffer, ByteString substring, InputStream input)
    {
    }
}
