package io.reverb.rpc;

import com.google.protobuf.Descriptors;
import java.util.Collection;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;

/**
 * A service's name and its methods, each bound to a {@link ServerCallHandler}, and, for a service generated
 * from a .proto, its protobuf descriptor (what the reflection service of reverb-services answers from). Immutable.
 */
public final class ServiceDefinition implements RpcService
{
    private final String serviceName;
    private final Map<String, ServerMethodDefinition<?, ?>> methods;
    private final Descriptors.ServiceDescriptor protoDescriptor;

    private ServiceDefinition(
        final String serviceName,
        final Map<String, ServerMethodDefinition<?, ?>> methods,
        final Descriptors.ServiceDescriptor protoDescriptor)
    {
        this.serviceName = serviceName;
        this.methods = Collections.unmodifiableMap(methods);
        this.protoDescriptor = protoDescriptor;
    }

    /**
     * @param serviceName fully qualified service name, e.g. {@code "helloworld.Greeter"}.
     * @return a builder.
     */
    public static Builder builder(final String serviceName)
    {
        return new Builder(serviceName);
    }

    /**
     * @return the fully qualified service name.
     */
    public String serviceName()
    {
        return serviceName;
    }

    /**
     * @return all methods.
     */
    public Collection<ServerMethodDefinition<?, ?>> methods()
    {
        return methods.values();
    }

    /**
     * @param fullMethodName {@code "package.Service/Method"}.
     * @return the method, or null.
     */
    public ServerMethodDefinition<?, ?> method(final String fullMethodName)
    {
        return methods.get(fullMethodName);
    }

    /**
     * @return the service's protobuf descriptor (its file, with the file's dependencies, is reachable from it), or
     *         null for a service not generated from a .proto (e.g. built by hand with other marshallers).
     */
    public Descriptors.ServiceDescriptor protoDescriptor()
    {
        return protoDescriptor;
    }

    @Override
    public ServiceDefinition bindService()
    {
        return this;
    }

    /**
     * A method and its handler.
     *
     * @param <Req>  request type.
     * @param <Resp> response type.
     */
    public static final class ServerMethodDefinition<Req, Resp>
    {
        private final MethodDescriptor<Req, Resp> method;
        private final ServerCallHandler<Req, Resp> handler;

        ServerMethodDefinition(final MethodDescriptor<Req, Resp> method, final ServerCallHandler<Req, Resp> handler)
        {
            this.method = method;
            this.handler = handler;
        }

        /**
         * A method served on its own, outside any service (what a fallback registry returns, see
         * {@link RpcServer.Builder#fallbackHandlerRegistry}).
         *
         * @param method  the descriptor.
         * @param handler its handler.
         * @param <Req>   request type.
         * @param <Resp>  response type.
         * @return the definition.
         */
        public static <Req, Resp> ServerMethodDefinition<Req, Resp> of(final MethodDescriptor<Req, Resp> method,
            final ServerCallHandler<Req, Resp> handler)
        {
            return new ServerMethodDefinition<>(Objects.requireNonNull(method, "method"),
                Objects.requireNonNull(handler, "handler"));
        }

        /**
         * @return the descriptor.
         */
        public MethodDescriptor<Req, Resp> method()
        {
            return method;
        }

        /**
         * @return the handler.
         */
        public ServerCallHandler<Req, Resp> handler()
        {
            return handler;
        }
    }

    /**
     * Builds a {@link ServiceDefinition}.
     */
    public static final class Builder
    {
        private final String serviceName;
        private final Map<String, ServerMethodDefinition<?, ?>> methods = new LinkedHashMap<>();
        private Descriptors.ServiceDescriptor protoDescriptor;

        private Builder(final String serviceName)
        {
            this.serviceName = Objects.requireNonNull(serviceName, "serviceName");
        }

        /**
         * @param method  the method; its service name must match the service's.
         * @param handler its handler.
         * @param <Req>   request type.
         * @param <Resp>  response type.
         * @return this.
         */
        public <Req, Resp> Builder addMethod(final MethodDescriptor<Req, Resp> method, final ServerCallHandler<Req, Resp> handler)
        {
            Objects.requireNonNull(method, "method");
            Objects.requireNonNull(handler, "handler");
            if (!serviceName.equals(method.serviceName()))
            {
                throw new IllegalArgumentException(
                    "method " + method.fullMethodName() + " does not belong to service " + serviceName);
            }
            if (methods.putIfAbsent(method.fullMethodName(), new ServerMethodDefinition<>(method, handler)) != null)
            {
                throw new IllegalArgumentException("method added twice: " + method.fullMethodName());
            }
            return this;
        }

        /**
         * Sets the protobuf descriptor of the service; generated service bases set it.
         *
         * @param descriptor the service's descriptor; its full name must be the service's name.
         * @return this.
         * @throws IllegalArgumentException if the descriptor names another service.
         */
        public Builder protoDescriptor(final Descriptors.ServiceDescriptor descriptor)
        {
            Objects.requireNonNull(descriptor, "descriptor");
            if (!serviceName.equals(descriptor.getFullName()))
            {
                throw new IllegalArgumentException(
                    "descriptor of " + descriptor.getFullName() + " given for service " + serviceName);
            }
            this.protoDescriptor = descriptor;
            return this;
        }

        /**
         * @return the definition.
         */
        public ServiceDefinition build()
        {
            return new ServiceDefinition(serviceName, new LinkedHashMap<>(methods), protoDescriptor);
        }
    }
}
