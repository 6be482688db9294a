package io.reverb.spring.boot;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Injects a field of a bean with a stub or channel of the Reverb channel named {@link #value()} (its settings under
 * {@code reverb.client.channels.NAME}):
 *
 * <pre>{@code
 * @ReverbClient("greeter") GreeterRpc.GreeterReactorStub greeter;      // a native Reactor stub
 * @ReverbClient("greeter") GreeterGrpc.GreeterBlockingStub blocking;   // a grpc-java stub (with reverb-grpc)
 * @ReverbClient("greeter") RpcChannel channel;                         // the native channel
 * @ReverbClient("greeter") ManagedChannel grpcChannel;                 // the grpc-java channel (with reverb-grpc)
 * }</pre>
 *
 * A stub's type is made by the static method of its enclosing class that takes the channel and returns that type
 * ({@code GreeterRpc.newReactorStub(RpcChannel)}, {@code GreeterGrpc.newBlockingStub(Channel)}). The channel is one per
 * name, shared by every stub of that name (see {@link ReverbChannelFactory}).
 */
@Target(ElementType.FIELD)
@Retention(RetentionPolicy.RUNTIME)
@Documented
public @interface ReverbClient
{
    /**
     * @return the channel's name under {@code reverb.client.channels}, or an address such as {@code tcp://host:port}.
     */
    String value();
}
