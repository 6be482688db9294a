package io.reverb.spring.boot.springgrpc;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.util.List;
import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.util.ClassUtils;

/**
 * Spring gRPC's customizers of the factories its auto-configuration makes, {@code GrpcServerFactoryCustomizer} and
 * {@code GrpcChannelFactoryCustomizer}: Spring gRPC gives each of its server and channel factories every such bean, in
 * order, once the factory is made; Reverb's factories get them too. The types live in each line's auto-configuration
 * module, under another package on each line (0.x for Boot 3.5, 1.0.x for Boot 4.0), which this module does not compile
 * against: they are found by name and their one method, {@code customize(factory)}, is called by reflection.
 */
final class SpringGrpcFactoryCustomizers
{
    /** {@code GrpcServerFactoryCustomizer}, by the name of each line: {@code customize(GrpcServerFactory)}. */
    static final List<String> SERVER = List.of(
        "org.springframework.grpc.autoconfigure.server.GrpcServerFactoryCustomizer",
        "org.springframework.boot.grpc.server.autoconfigure.GrpcServerFactoryCustomizer");
    /** {@code GrpcChannelFactoryCustomizer}, by the name of each line: {@code customize(GrpcChannelFactory)}. */
    static final List<String> CHANNEL = List.of(
        "org.springframework.grpc.autoconfigure.client.GrpcChannelFactoryCustomizer",
        "org.springframework.boot.grpc.client.autoconfigure.GrpcChannelFactoryCustomizer");

    private SpringGrpcFactoryCustomizers()
    {
    }

    /**
     * Gives {@code factory} to every bean of the customizer types on the class path, in order; what one throws fails the
     * factory's creation, as it does Spring gRPC's.
     *
     * @param beans       where the customizer beans are found.
     * @param types       the customizer types' names ({@link #SERVER} or {@link #CHANNEL}); absent ones are skipped.
     * @param factoryType the type {@code customize} takes.
     * @param factory     the factory to customize.
     * @param <F>         the factory's type.
     */
    static <F> void apply(final ListableBeanFactory beans, final List<String> types, final Class<F> factoryType,
        final F factory)
    {
        final ClassLoader loader = SpringGrpcFactoryCustomizers.class.getClassLoader();
        for (final String name : types)
        {
            if (!ClassUtils.isPresent(name, loader))
            {
                continue;
            }
            final Class<?> type = ClassUtils.resolveClassName(name, loader);
            final Method customize = ClassUtils.getMethod(type, "customize", factoryType);
            beans.getBeanProvider(type).orderedStream().forEach(customizer -> invoke(customize, customizer, factory));
        }
    }

    private static void invoke(final Method customize, final Object customizer, final Object factory)
    {
        try
        {
            customize.invoke(customizer, factory);
        }
        catch (final InvocationTargetException e)
        {
            final Throwable cause = e.getCause();
            if (cause instanceof RuntimeException)
            {
                throw (RuntimeException)cause;
            }
            if (cause instanceof Error)
            {
                throw (Error)cause;
            }
            throw new IllegalStateException(customizer + " failed customizing " + factory, cause);
        }
        catch (final IllegalAccessException e)
        {
            throw new IllegalStateException("cannot call " + customize + " on " + customizer, e);
        }
    }
}
