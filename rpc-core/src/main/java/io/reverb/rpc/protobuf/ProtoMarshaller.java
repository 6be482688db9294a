package io.reverb.rpc.protobuf;

import com.google.protobuf.CodedInputStream;
import com.google.protobuf.CodedOutputStream;
import com.google.protobuf.ExtensionRegistryLite;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.MessageLite;
import com.google.protobuf.Parser;
import com.google.protobuf.UnsafeByteOperations;
import io.reverb.rpc.Marshaller;
import io.reverb.rpc.Status;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.util.Objects;

/**
 * {@link Marshaller} for protobuf messages that writes with {@link CodedOutputStream} straight into the transport's
 * buffer (registered memory for RDMA) and parses straight from it: no intermediate {@code byte[]} for direct
 * buffers.
 *
 * @param <T> message type.
 */
public final class ProtoMarshaller<T extends MessageLite> implements Marshaller<T>
{
    private static final int SMALL_MESSAGE = 1024;
    private static final ThreadLocal<Encoder> ENCODERS = ThreadLocal.withInitial(Encoder::new);

    private final T defaultInstance;
    private final Parser<T> parser;

    @SuppressWarnings("unchecked")
    private ProtoMarshaller(final T defaultInstance)
    {
        this.defaultInstance = Objects.requireNonNull(defaultInstance, "defaultInstance");
        this.parser = (Parser<T>)defaultInstance.getParserForType();
    }

    /**
     * @param defaultInstance the message type's default instance, e.g. {@code HelloRequest.getDefaultInstance()}.
     * @param <T>             message type.
     * @return a marshaller.
     */
    public static <T extends MessageLite> Marshaller<T> of(final T defaultInstance)
    {
        return new ProtoMarshaller<>(defaultInstance);
    }

    /**
     * @return the default instance.
     */
    public T defaultInstance()
    {
        return defaultInstance;
    }

    @Override
    public int serializedSize(final T value)
    {
        // protobuf caches the size in the message, so the write below does not compute it again
        return value.getSerializedSize();
    }

    @Override
    public void write(final T value, final ByteBuffer target)
    {
        // Small messages (the common case) go through this thread's reusable encoder: CodedOutputStream cannot be
        // re-targeted, and a new one over a direct buffer costs two objects (~150 bytes) per message.
        final Encoder encoder = value.getSerializedSize() <= SMALL_MESSAGE ? ENCODERS.get() : null;
        if (encoder != null && encoder.target == null)
        {
            encoder.target = target;
            try
            {
                value.writeTo(encoder.output);
                encoder.output.flush();
            }
            catch (final IOException | RuntimeException e)
            {
                ENCODERS.remove(); // it may hold part of this message: never reuse it
                throw serializationFailed(e);
            }
            finally
            {
                encoder.target = null;
            }
            return;
        }
        try
        {
            final CodedOutputStream output = CodedOutputStream.newInstance(target);
            value.writeTo(output);
            output.flush();
        }
        catch (final IOException e)
        {
            throw serializationFailed(e);
        }
    }

    private static RuntimeException serializationFailed(final Exception e)
    {
        return Status.INTERNAL.withDescription("protobuf serialization failed: " + e.getMessage())
            .withCause(e).asException();
    }

    /**
     * A per-thread {@link CodedOutputStream} over a small heap buffer whose flush copies into the current target
     * (registered memory): one copy of a small message, no allocation; and a scratch array small messages are
     * parsed from.
     */
    private static final class Encoder extends OutputStream
    {
        final CodedOutputStream output = CodedOutputStream.newInstance(this, SMALL_MESSAGE);
        final byte[] scratch = new byte[SMALL_MESSAGE];
        ByteBuffer target;

        @Override
        public void write(final int b)
        {
            target.put((byte)b);
        }

        @Override
        public void write(final byte[] bytes, final int offset, final int length)
        {
            target.put(bytes, offset, length);
        }
    }

    @Override
    public T read(final ByteBuffer source)
    {
        try
        {
            final CodedInputStream input;
            if (source.hasArray())
            {
                input = CodedInputStream.newInstance(source);
                // the buffer is only valid during this call: parsed bytes fields must be copies, never aliases
                input.enableAliasing(false);
            }
            else
            {
                // protobuf-java 4.x has no decoder over direct memory: it would copy the whole message into a new heap
                // array and then copy every bytes field out of that array again.
                final int length = source.remaining();
                if (length <= SMALL_MESSAGE)
                {
                    // small: into this thread's scratch array (no allocation); bytes fields are copied out of it
                    final byte[] scratch = ENCODERS.get().scratch;
                    source.get(source.position(), scratch, 0, length);
                    input = CodedInputStream.newInstance(scratch, 0, length);
                    input.enableAliasing(false);
                }
                else
                {
                    // large: one private copy, marked immutable so that bytes fields alias it (one copy of a 1 MiB
                    // payload, not two; a plain newInstance(byte[]) is mutable, and protobuf copies fields out of it)
                    final byte[] copy = new byte[length];
                    source.get(source.position(), copy);
                    input = UnsafeByteOperations.unsafeWrap(copy).newCodedInput();
                    input.enableAliasing(true);
                }
            }
            final T message = parser.parseFrom(input, ExtensionRegistryLite.getEmptyRegistry());
            input.checkLastTagWas(0);
            return message;
        }
        catch (final InvalidProtocolBufferException e)
        {
            throw Status.INTERNAL.withDescription("invalid protobuf message: " + e.getMessage())
                .withCause(e).asException();
        }
    }
}
