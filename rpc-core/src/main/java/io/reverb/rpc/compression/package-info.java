/**
 * Message compression: the {@link io.reverb.rpc.compression.Codec} SPI, gzip built in
 * ({@link io.reverb.rpc.compression.GzipCodec}), and the registry a channel or server looks names up in
 * ({@link io.reverb.rpc.compression.CodecRegistry}).
 *
 * <p>A message is compressed when the call asks for a codec ({@code CallOptions.withCompression("gzip")}, the
 * channel's {@code compression("gzip")}, the server's {@code compression("gzip")} or a handler's
 * {@code RpcContext.responseCompression}) and its serialized size is at least the sender's minimum
 * ({@code minCompressionSize}, default 1 KiB), and only if the result is smaller; the MESSAGE frame then carries the
 * COMPRESSED flag and the codec's name. The receiver decompresses at most its {@code maxInboundMessageSize}: a
 * message that inflates past it fails its call with RESOURCE_EXHAUSTED and nothing else.
 */
package io.reverb.rpc.compression;
