package io.reverb.spring.boot;

import io.grpc.ManagedChannel;
import io.reverb.rpc.RpcChannel;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import org.springframework.beans.BeansException;
import org.springframework.beans.factory.BeanCreationException;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.beans.factory.config.BeanPostProcessor;
import org.springframework.util.ClassUtils;
import org.springframework.util.ReflectionUtils;

/**
 * Injects {@link ReverbClient} fields before a bean's initialisation callbacks run.
 */
final class ReverbClientInjector implements BeanPostProcessor
{
    private static final String GRPC_CHANNEL = "io.grpc.Channel";

    private final BeanFactory beans;

    ReverbClientInjector(final BeanFactory beans)
    {
        this.beans = beans;
    }

    @Override
    public Object postProcessBeforeInitialization(final Object bean, final String beanName) throws BeansException
    {
        ReflectionUtils.doWithFields(bean.getClass(), field ->
        {
            final ReverbClient client = field.getAnnotation(ReverbClient.class);
            if (client != null)
            {
                final Object value;
                try
                {
                    value = resolve(field, client.value());
                }
                catch (final RuntimeException e)
                {
                    throw new BeanCreationException(beanName, "cannot inject @ReverbClient(\"" + client.value() + "\") " +
                        field.getDeclaringClass().getSimpleName() + "." + field.getName() + ": " + e.getMessage(), e);
                }
                ReflectionUtils.makeAccessible(field);
                ReflectionUtils.setField(field, bean, value);
            }
        });
        return bean;
    }

    private Object resolve(final Field field, final String name)
    {
        final Class<?> type = field.getType();
        if (type.isAssignableFrom(RpcChannel.class))
        {
            return beans.getBean(ReverbChannelFactory.class).channel(name);
        }
        final ClassLoader loader = type.getClassLoader();
        final boolean grpc = ClassUtils.isPresent(GRPC_CHANNEL, loader);
        if (grpc && GrpcChannels.isGrpcChannelType(type))
        {
            return GrpcChannels.channel(beans, name);
        }
        final Class<?> factoryClass = type.getEnclosingClass() != null ? type.getEnclosingClass() : type;
        for (final Method method : factoryClass.getDeclaredMethods())
        {
            if (Modifier.isStatic(method.getModifiers()) && Modifier.isPublic(method.getModifiers()) &&
                method.getParameterCount() == 1 && method.getReturnType() == type)
            {
                final Class<?> parameter = method.getParameterTypes()[0];
                if (parameter == RpcChannel.class)
                {
                    return ReflectionUtils.invokeMethod(method, null, beans.getBean(ReverbChannelFactory.class).channel(name));
                }
                if (grpc && parameter.getName().equals(GRPC_CHANNEL))
                {
                    return ReflectionUtils.invokeMethod(method, null, GrpcChannels.channel(beans, name));
                }
            }
        }
        throw new IllegalArgumentException("a @ReverbClient field is an RpcChannel, a grpc-java Channel, or a stub whose " +
            "enclosing class has a public static method taking the channel and returning it (" + factoryClass.getName() +
            " has none returning " + type.getSimpleName() + ")");
    }

    /** Kept apart so that grpc-java's classes are loaded only when it is on the class path. */
    private static final class GrpcChannels
    {
        static boolean isGrpcChannelType(final Class<?> type)
        {
            return type.isAssignableFrom(ManagedChannel.class);
        }

        static Object channel(final BeanFactory beans, final String name)
        {
            return beans.getBean(ReverbGrpcChannelFactory.class).channel(name);
        }
    }
}
