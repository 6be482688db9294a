package io.reverb.rpc.transport;

/**
 * What {@code RpcServer.Builder.streamHandler} takes: a {@link io.reverb.rpc.transport.stream.ServerStreamHandler}
 * (the only implementation). It exists so that the API package names no type of the stream SPI, which itself uses
 * the API's types (the packages form no cycle).
 */
public interface StreamHandling
{
}
