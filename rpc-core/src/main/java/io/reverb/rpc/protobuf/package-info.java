/**
 * Protobuf support: {@link io.reverb.rpc.protobuf.ProtoMarshaller}.
 */
package io.reverb.rpc.protobuf;
