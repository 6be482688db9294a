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

    /**
     * rpc-core says that the message's lifetime as it defines it has ended: for a marshaller that lends memory to the
     * messages it reads (as {@code ProtoMarshaller.aliasing(...)} does), the memory may be reused from now on.
     * Called at most once per message, from any thread; never called for a message whose lifetime rpc-core cannot
     * bound (then the memory is simply left to the garbage collector). The lifetimes:
     * <ul>
     *   <li>a response, on the client: until the subscriber's {@code onNext} that delivers it returns;</li>
     *   <li>the request of a unary or server-streaming call, on the server: until the call's last frame (its
     *   STATUS, after every response) has been written, so that responses may reference the request;</li>
     *   <li>requests of client-streaming and bidi calls: not bounded (never released).</li>
     * </ul>
     * The default does nothing: a marshaller whose messages own their bytes needs no notice.
     *
     * @param message a message this marshaller's {@link #read(ByteBuffer)} returned.
     */
    default void release(final T message)
    {
    }
}
