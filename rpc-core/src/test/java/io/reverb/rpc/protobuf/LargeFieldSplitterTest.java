package io.reverb.rpc.protobuf;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.protobuf.Any;
import com.google.protobuf.ByteString;
import com.google.protobuf.BytesValue;
import com.google.protobuf.DescriptorProtos.DescriptorProto;
import com.google.protobuf.DescriptorProtos.FieldDescriptorProto;
import com.google.protobuf.DescriptorProtos.FileDescriptorProto;
import com.google.protobuf.DescriptorProtos.OneofDescriptorProto;
import com.google.protobuf.Descriptors.Descriptor;
import com.google.protobuf.Descriptors.DescriptorValidationException;
import com.google.protobuf.Descriptors.FileDescriptor;
import com.google.protobuf.DynamicMessage;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.Message;
import com.google.protobuf.UnknownFieldSet;
import io.reverb.rpc.Marshaller;
import io.reverb.rpc.RpcException;
import io.reverb.rpc.StatusCode;
import java.nio.ByteBuffer;
import java.util.Arrays;
import org.junit.jupiter.api.Test;

/**
 * The default marshaller reads a large singular {@code bytes} field out of registered memory as a rope of
 * {@value LargeFieldSplitter#CHUNK}-byte arrays ({@link LargeFieldSplitter}): the message must equal what protobuf's
 * own parser makes of the same bytes, in every case the splitter handles or hands back, and must not alias the
 * transport's buffer.
 */
class LargeFieldSplitterTest
{
    private static final int LARGE = 1024 * 1024 + 5;
    private static final Descriptor MIXED;
    private static final Descriptor REQUIRED;

    static
    {
        final FieldDescriptorProto.Type bytes = FieldDescriptorProto.Type.TYPE_BYTES;
        final FileDescriptorProto file = FileDescriptorProto.newBuilder()
            .setName("reverb_split_test.proto")
            .setPackage("reverb.split.test")
            .addMessageType(DescriptorProto.newBuilder().setName("Mixed")
                .addField(field("a", 1, bytes, FieldDescriptorProto.Label.LABEL_OPTIONAL))
                .addField(field("r", 2, bytes, FieldDescriptorProto.Label.LABEL_REPEATED))
                .addField(field("b", 3, bytes, FieldDescriptorProto.Label.LABEL_OPTIONAL).setOneofIndex(0))
                .addField(field("s", 4, FieldDescriptorProto.Type.TYPE_STRING, FieldDescriptorProto.Label.LABEL_OPTIONAL)
                    .setOneofIndex(0))
                .addField(field("n", 5, FieldDescriptorProto.Type.TYPE_INT64, FieldDescriptorProto.Label.LABEL_OPTIONAL))
                .addField(field("c", 6, bytes, FieldDescriptorProto.Label.LABEL_OPTIONAL))
                .addOneofDecl(OneofDescriptorProto.newBuilder().setName("o")))
            .addMessageType(DescriptorProto.newBuilder().setName("Required")
                .addField(field("data", 1, bytes, FieldDescriptorProto.Label.LABEL_REQUIRED))
                .addField(field("n", 2, FieldDescriptorProto.Type.TYPE_INT32, FieldDescriptorProto.Label.LABEL_REQUIRED)))
            .build();
        try
        {
            final FileDescriptor descriptor = FileDescriptor.buildFrom(file, new FileDescriptor[0]);
            MIXED = descriptor.findMessageTypeByName("Mixed");
            REQUIRED = descriptor.findMessageTypeByName("Required");
        }
        catch (final DescriptorValidationException e)
        {
            throw new ExceptionInInitializerError(e);
        }
    }

    @Test
    void shouldReadALargeBytesFieldAsSmallArraysThatOutliveTheTransportBuffer()
    {
        final Marshaller<BytesValue> m = ProtoMarshaller.of(BytesValue.getDefaultInstance());
        final BytesValue sent = BytesValue.of(pattern(LARGE, 3));
        final ByteBuffer registered = ByteBuffer.allocateDirect(m.serializedSize(sent));
        m.write(sent, registered);
        registered.flip();

        final BytesValue received = m.read(registered);
        overwrite(registered);

        assertThat(received).isEqualTo(sent);
        assertThat(pieces(received.getValue())).isEqualTo((LARGE + LargeFieldSplitter.CHUNK - 1) / LargeFieldSplitter.CHUNK);
        assertThat(received.getValue().asReadOnlyByteBufferList()).allSatisfy(
            piece -> assertThat(piece.remaining()).isLessThanOrEqualTo(LargeFieldSplitter.CHUNK));
    }

    @Test
    void shouldLeaveAFieldOfAtMostOneChunkAsOneArray()
    {
        final BytesValue sent = BytesValue.of(pattern(LargeFieldSplitter.CHUNK, 1));
        final BytesValue received = read(ProtoMarshaller.of(BytesValue.getDefaultInstance()), sent.toByteArray());
        assertThat(received).isEqualTo(sent);
        assertThat(pieces(received.getValue())).isEqualTo(1);
    }

    @Test
    void shouldKeepTheOtherFieldsAndUnknownFields()
    {
        final Any any = Any.newBuilder().setTypeUrl("type.googleapis.com/reverb.Large").setValue(pattern(LARGE, 5))
            .setUnknownFields(UnknownFieldSet.newBuilder()
                .addField(9, UnknownFieldSet.Field.newBuilder().addVarint(42).build())
                .addField(11, UnknownFieldSet.Field.newBuilder().addLengthDelimited(pattern(700_000, 7)).build())
                .build())
            .build();
        final Any received = read(ProtoMarshaller.of(Any.getDefaultInstance()), any.toByteArray());
        assertThat(received).isEqualTo(any);
        assertThat(received.getUnknownFields()).isEqualTo(any.getUnknownFields());
        assertThat(pieces(received.getValue())).isGreaterThan(1);
    }

    @Test
    void shouldKeepTheLastOccurrenceOfAFieldAsTheParserDoes()
    {
        final Marshaller<BytesValue> m = ProtoMarshaller.of(BytesValue.getDefaultInstance());
        final byte[] big1 = BytesValue.of(pattern(LARGE, 1)).toByteArray();
        final byte[] big2 = BytesValue.of(pattern(LARGE + 100, 2)).toByteArray();
        final byte[] small = BytesValue.of(pattern(10, 3)).toByteArray();

        assertSameAsParser(m, concat(big1, big2), BytesValue.getDefaultInstance());
        assertSameAsParser(m, concat(small, big1), BytesValue.getDefaultInstance());
        final BytesValue bigThenSmall = assertSameAsParser(m, concat(big1, small), BytesValue.getDefaultInstance());
        assertThat(bigThenSmall.getValue().size()).isEqualTo(10);
    }

    @Test
    void shouldSplitOnlySingularFieldsOutsideAOneofAndMatchTheParser()
    {
        final Message sent = DynamicMessage.newBuilder(MIXED)
            .setField(MIXED.findFieldByName("a"), pattern(LARGE, 1))
            .addRepeatedField(MIXED.findFieldByName("r"), pattern(600_000, 2))
            .addRepeatedField(MIXED.findFieldByName("r"), pattern(3, 3))
            .setField(MIXED.findFieldByName("b"), pattern(LARGE, 4))
            .setField(MIXED.findFieldByName("n"), -7L)
            .setField(MIXED.findFieldByName("c"), pattern(100, 5))
            .build();
        final Marshaller<DynamicMessage> m = ProtoMarshaller.of(DynamicMessage.getDefaultInstance(MIXED));
        final Message received = assertSameAsParser(m, sent.toByteArray(), DynamicMessage.getDefaultInstance(MIXED));
        assertThat(received).isEqualTo(sent);
        assertThat(pieces((ByteString)received.getField(MIXED.findFieldByName("a")))).isGreaterThan(1);
        assertThat(pieces((ByteString)received.getField(MIXED.findFieldByName("b")))).isEqualTo(1);
        assertThat(pieces((ByteString)received.getRepeatedField(MIXED.findFieldByName("r"), 0))).isEqualTo(1);
    }

    @Test
    void shouldFailAsBeforeOnTruncatedOrIncompleteMessages()
    {
        final byte[] wire = BytesValue.of(pattern(LARGE, 1)).toByteArray();
        final Marshaller<BytesValue> m = ProtoMarshaller.of(BytesValue.getDefaultInstance());
        assertThatThrownBy(() -> read(m, Arrays.copyOf(wire, wire.length - 10)))
            .isInstanceOfSatisfying(RpcException.class, e -> assertThat(e.status().code()).isEqualTo(StatusCode.INTERNAL));

        // proto2 required: the large field split out of the wire does not make its message look incomplete, and a
        // missing one is still reported
        final Marshaller<DynamicMessage> required = ProtoMarshaller.of(DynamicMessage.getDefaultInstance(REQUIRED));
        final DynamicMessage complete = DynamicMessage.newBuilder(REQUIRED)
            .setField(REQUIRED.findFieldByName("data"), pattern(LARGE, 2))
            .setField(REQUIRED.findFieldByName("n"), 1)
            .build();
        assertThat(read(required, complete.toByteArray())).isEqualTo(complete);
        final byte[] withoutN = DynamicMessage.newBuilder(REQUIRED)
            .setField(REQUIRED.findFieldByName("data"), pattern(LARGE, 2))
            .buildPartial().toByteArray();
        assertThatThrownBy(() -> read(required, withoutN))
            .isInstanceOfSatisfying(RpcException.class, e -> assertThat(e.status().code()).isEqualTo(StatusCode.INTERNAL))
            .hasMessageContaining("n");
    }

    @Test
    void shouldNotSplitInAliasingMode()
    {
        final ProtoMarshaller<BytesValue> m =
            (ProtoMarshaller<BytesValue>)ProtoMarshaller.aliasing(BytesValue.getDefaultInstance());
        final BytesValue sent = BytesValue.of(pattern(LARGE, 1));
        final BytesValue received = read(m, sent.toByteArray());
        assertThat(received).isEqualTo(sent);
        assertThat(pieces(received.getValue())).isEqualTo(1);
        m.release(received);
        assertThat(m.lentArrays()).isZero();
    }

    private static <T extends Message> T assertSameAsParser(final Marshaller<T> m, final byte[] wire, final T type)
    {
        final T received = read(m, wire);
        try
        {
            assertThat(received).isEqualTo(type.getParserForType().parseFrom(wire));
        }
        catch (final InvalidProtocolBufferException e)
        {
            throw new AssertionError(e);
        }
        return received;
    }

    private static <T> T read(final Marshaller<T> m, final byte[] wire)
    {
        final ByteBuffer registered = ByteBuffer.allocateDirect(wire.length);
        registered.put(wire).flip();
        final T value = m.read(registered);
        overwrite(registered);
        return value;
    }

    private static void overwrite(final ByteBuffer registered)
    {
        for (int i = 0; i < registered.capacity(); i++)
        {
            registered.put(i, (byte)0xDB);
        }
    }

    private static int pieces(final ByteString value)
    {
        return value.asReadOnlyByteBufferList().size();
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

    private static byte[] concat(final byte[] first, final byte[] second)
    {
        final byte[] both = Arrays.copyOf(first, first.length + second.length);
        System.arraycopy(second, 0, both, first.length, second.length);
        return both;
    }

    private static FieldDescriptorProto.Builder field(
        final String name, final int number, final FieldDescriptorProto.Type type, final FieldDescriptorProto.Label label)
    {
        return FieldDescriptorProto.newBuilder().setName(name).setNumber(number).setType(type).setLabel(label);
    }
}
