package io.reverb.rpc;

import java.nio.ByteBuffer;

/**
 * Converts messages to and from the transport's buffers. For RDMA transports the target buffer is registered
 * memory, so a marshaller that writes straight into it (as {@code ProtoMarshaller} does) sends without copying.
 *
 * <p>Implementations must be thread-safe (stateless in practice): one marshaller serves all calls.
 *
 * @param <T> message type.
 */
public interface Marshaller<T>
{
    /**
     * @param value a message.
     * @return the exact number of bytes {@link #write(Object, ByteBuffer)} will write.
     */
    int serializedSize(T value);

    /**
     * Writes exactly {@link #serializedSize(Object)} bytes at the target's position. The buffer's position after the
     * call does not matter; its byte order may be changed.
     *
     * @param value  the message, the same one just measured.
     * @param target a buffer with at least serializedSize bytes remaining.
     */
    void write(T value, ByteBuffer target);

    /**
     * Parses a message from source's position to its limit. The buffer is valid only during this call: the result
     * must not keep a reference to it.
     *
     * @param source the serialized message.
     * @return the message.
     */
    T read(ByteBuffer source);
}
