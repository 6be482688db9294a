package io.reverb.bench;

import com.google.protobuf.ByteString;
import com.google.protobuf.BytesValue;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * The one service every benchmark target serves, declared once for both frameworks.
 *
 * <pre>
 * service reverb.bench.EchoService {
 *   rpc Echo(google.protobuf.BytesValue) returns (google.protobuf.BytesValue);          // unary: answers its request
 *   rpc Stream(google.protobuf.BytesValue) returns (stream google.protobuf.BytesValue); // server streaming
 * }
 * </pre>
 *
 * <p>Both frameworks marshal {@link BytesValue} with protobuf, so a payload of N bytes costs the
 * same serialisation work everywhere. The descriptors are hand-built (no protoc, no generated
 * stubs): see {@link io.reverb.bench.target.GrpcTarget} and {@link io.reverb.bench.target.ReverbTarget}.
 *
 * <p>A {@code Stream} request carries a {@link StreamRequest}: how many messages to answer and
 * how large each one is, encoded in the request bytes.
 */
public final class EchoService
{
    /** Service name, as in a .proto file's package and service. */
    public static final String SERVICE_NAME = "reverb.bench.EchoService";
    /** Simple name of the unary method. */
    public static final String ECHO = "Echo";
    /** Simple name of the server-streaming method. */
    public static final String STREAM = "Stream";
    /** Full name of the unary method, {@code service/method}. */
    public static final String ECHO_FULL_NAME = SERVICE_NAME + "/" + ECHO;
    /** Full name of the server-streaming method, {@code service/method}. */
    public static final String STREAM_FULL_NAME = SERVICE_NAME + "/" + STREAM;

    private EchoService()
    {
    }

    /**
     * @param size payload length in bytes.
     * @return a request message carrying {@code size} bytes of non-zero, non-repeating-per-byte data.
     */
    public static BytesValue payload(final int size)
    {
        final byte[] bytes = new byte[size];
        for (int i = 0; i < size; i++)
        {
            bytes[i] = (byte)(i * 31 + 7);
        }
        return BytesValue.newBuilder().setValue(ByteString.copyFrom(bytes)).build();
    }

    /**
     * What a {@code Stream} call asks for: {@code count} messages of {@code size} bytes each.
     *
     * @param count number of messages the server sends before it completes.
     * @param size  payload length of each message.
     */
    public record StreamRequest(int count, int size)
    {
        /** Encoded length: two little-endian 32-bit integers. */
        public static final int ENCODED_LENGTH = 8;

        /**
         * @return this request as the request message of a {@code Stream} call.
         */
        public BytesValue encode()
        {
            final ByteBuffer buffer = ByteBuffer.allocate(ENCODED_LENGTH).order(ByteOrder.LITTLE_ENDIAN);
            buffer.putInt(count).putInt(size).flip();
            return BytesValue.newBuilder().setValue(ByteString.copyFrom(buffer)).build();
        }

        /**
         * @param message request message of a {@code Stream} call.
         * @return the decoded request.
         * @throws IllegalArgumentException if the message is not a stream request.
         */
        public static StreamRequest decode(final BytesValue message)
        {
            final ByteString value = message.getValue();
            if (value.size() != ENCODED_LENGTH)
            {
                throw new IllegalArgumentException("stream request must be " + ENCODED_LENGTH + " bytes: " + value.size());
            }
            final ByteBuffer buffer = value.asReadOnlyByteBuffer().order(ByteOrder.LITTLE_ENDIAN);
            return new StreamRequest(buffer.getInt(), buffer.getInt());
        }
    }

    /**
     * Server-side answer cache: the message a {@code Stream} call repeats, built once per size.
     */
    public static final class StreamReplies
    {
        private volatile BytesValue last = payload(0);

        /**
         * @param size payload length.
         * @return a message of {@code size} bytes, reused across calls asking for the same size.
         */
        public BytesValue ofSize(final int size)
        {
            BytesValue message = last;
            if (message.getValue().size() != size)
            {
                message = payload(size);
                last = message;
            }
            return message;
        }
    }
}
