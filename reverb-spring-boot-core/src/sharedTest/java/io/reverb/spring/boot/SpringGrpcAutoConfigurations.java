package io.reverb.spring.boot;

import java.lang.reflect.Proxy;
import java.util.List;
import org.springframework.util.ClassUtils;

/**
 * Spring gRPC's auto-configurations of the starter line under test, by name: Spring gRPC's own module's on Boot 3.5
 * (0.x, {@code org.springframework.grpc.autoconfigure.*}), the Spring Boot-named ones on Boot 4.0 (1.0.x,
 * {@code org.springframework.boot.grpc.*.autoconfigure}).
 */
public final class SpringGrpcAutoConfigurations
{
    private SpringGrpcAutoConfigurations()
    {
    }

    /** @return Spring gRPC's server factory and server auto-configurations. */
    public static Class<?>[] server()
    {
        for (final String pkg : List.of("org.springframework.grpc.autoconfigure.server.",
            "org.springframework.boot.grpc.server.autoconfigure."))
        {
            if (ClassUtils.isPresent(pkg + "GrpcServerAutoConfiguration", null))
            {
                return new Class<?>[] {ClassUtils.resolveClassName(pkg + "GrpcServerFactoryAutoConfiguration", null),
                    ClassUtils.resolveClassName(pkg + "GrpcServerAutoConfiguration", null)};
            }
        }
        throw new IllegalStateException("no Spring gRPC server auto-configuration on the class path");
    }

    /** @return Spring gRPC's {@code GrpcServerFactoryCustomizer} (the type its server factories are customized by). */
    public static Class<Object> serverFactoryCustomizer()
    {
        return firstPresent("org.springframework.grpc.autoconfigure.server.GrpcServerFactoryCustomizer",
            "org.springframework.boot.grpc.server.autoconfigure.GrpcServerFactoryCustomizer");
    }

    /** @return Spring gRPC's {@code GrpcChannelFactoryCustomizer} (the type its channel factories are customized by). */
    public static Class<Object> channelFactoryCustomizer()
    {
        return firstPresent("org.springframework.grpc.autoconfigure.client.GrpcChannelFactoryCustomizer",
            "org.springframework.boot.grpc.client.autoconfigure.GrpcChannelFactoryCustomizer");
    }

    /**
     * @param type     a Spring gRPC factory customizer type ({@link #serverFactoryCustomizer()},
     *                 {@link #channelFactoryCustomizer()}).
     * @param factories where each factory given to it is added.
     * @return a customizer of that type that only records the factories it is given.
     */
    public static Object recordingCustomizer(final Class<Object> type, final List<Object> factories)
    {
        return Proxy.newProxyInstance(type.getClassLoader(), new Class<?>[] {type}, (proxy, method, args) ->
        {
            switch (method.getName())
            {
                case "customize":
                    factories.add(args[0]);
                    return null;
                case "equals":
                    return proxy == args[0];
                case "hashCode":
                    return System.identityHashCode(proxy);
                default:
                    return "recording " + type.getSimpleName();
            }
        });
    }

    @SuppressWarnings("unchecked")
    private static Class<Object> firstPresent(final String... names)
    {
        for (final String name : names)
        {
            if (ClassUtils.isPresent(name, null))
            {
                return (Class<Object>)ClassUtils.resolveClassName(name, null);
            }
        }
        throw new IllegalStateException("none of " + List.of(names) + " on the class path");
    }

    /** @return Spring gRPC's client auto-configuration. */
    public static Class<?> client()
    {
        return firstPresent("org.springframework.grpc.autoconfigure.client.GrpcClientAutoConfiguration",
            "org.springframework.boot.grpc.client.autoconfigure.GrpcClientAutoConfiguration");
    }
}
