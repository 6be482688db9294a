/**
 * The wire protocol: frames inside transport messages. Header layout in
 * {@link io.reverb.rpc.wire.FrameHeaderFlyweight}, bodies in {@link io.reverb.rpc.wire.FrameType}.
 *
 * <p>A unary call is CALL + MESSAGE(END_STREAM) from the client and MESSAGE + STATUS from the server. The client
 * may send one request message before the server asks (so unary calls need no REQUEST_N round trip); after that,
 * each side sends messages only as far as the other's REQUEST_N allow. A peer that breaks these rules gets GOAWAY
 * with INTERNAL and the connection is closed.
 */
package io.reverb.rpc.wire;
