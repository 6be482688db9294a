package io.reverb.rpc.compression;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;

/**
 * A message compression codec, named as in gRPC's {@code grpc-encoding} ({@code "gzip"}), in the shape of grpc-java's
 * {@code io.grpc.Codec}: a stream wrapper each way, so that a grpc-java codec adapts in two lines. Implementations
 * must be thread-safe (stateless in practice: each call of {@link #compress} or {@link #decompress} returns a new
 * stream). Built in: {@link GzipCodec}; more through {@link CodecRegistry#with(Codec)} on the channel and the server.
 *
 * <p>A compressed MESSAGE frame names its codec, and the receiver looks the name up in its own registry: a name it
 * does not know fails that call (UNIMPLEMENTED on a server, INTERNAL on a client, as grpc-java does), never the
 * connection.
 */
public interface Codec
{
    /**
     * @return the name on the wire: 1 to 255 characters of {@code [a-z0-9._-]}, as gRPC's content-coding tokens.
     */
    String name();

    /**
     * @param out where the compressed bytes go.
     * @return a stream whose bytes arrive compressed in {@code out}; closing it finishes the compressed form and
     * closes {@code out}.
     * @throws IOException if the stream cannot be set up.
     */
    OutputStream compress(OutputStream out) throws IOException;

    /**
     * @param in the compressed bytes.
     * @return a stream of the decompressed bytes; it is read only as far as the receiver's
     * {@code maxInboundMessageSize} allows, so a codec must not decompress ahead of what is read.
     * @throws IOException if the stream cannot be set up (e.g. a corrupt header).
     */
    InputStream decompress(InputStream in) throws IOException;
}
