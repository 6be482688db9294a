package io.reverb.rpc;

/**
 * Something that can be served: a generated {@code FooImplBase}, or any class that builds its own
 * {@link ServiceDefinition}.
 */
public interface RpcService
{
    /**
     * @return the service's methods and their handlers.
     */
    ServiceDefinition bindService();
}
