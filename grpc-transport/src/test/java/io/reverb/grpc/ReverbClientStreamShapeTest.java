package io.reverb.grpc;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * A grpc-java call over Reverb is one Reverb stream under grpc-java's call: the client stream is not a Reactor
 * subscriber of an rpc-core call (which ran a second call state machine, over Reactor, under every grpc-java call),
 * and it knows nothing of grpc-java's private classes (it once recognised the blocking stub's
 * {@code ClientCalls$ThreadlessExecutor} by name). Read from the class itself: its supertypes, fields and methods.
 */
class ReverbClientStreamShapeTest
{
    @Test
    void shouldUseNoReactorOrReactiveStreamsTypeOnTheClientCallPath()
    {
        final List<String> reactive = new ArrayList<>();
        for (Class<?> c = ReverbClientStream.class; c != null && c != Object.class; c = c.getSuperclass())
        {
            check(c, reactive);
            for (final Class<?> i : c.getInterfaces())
            {
                check(i, reactive);
            }
            for (final Field f : c.getDeclaredFields())
            {
                check(f.getType(), reactive);
            }
            for (final Method m : c.getDeclaredMethods())
            {
                check(m.getReturnType(), reactive);
                for (final Class<?> p : m.getParameterTypes())
                {
                    check(p, reactive);
                }
            }
        }
        assertThat(reactive).as("Reactor types on the grpc-java client stream").isEmpty();
    }

    @Test
    void shouldNotKnowGrpcJavasPrivateExecutor() throws Exception
    {
        final List<String> constants = new ArrayList<>();
        for (Class<?> c = ReverbClientStream.class; c != null && c != Object.class; c = c.getSuperclass())
        {
            for (final Field f : c.getDeclaredFields())
            {
                if (Modifier.isStatic(f.getModifiers()) && f.getType() == String.class)
                {
                    f.setAccessible(true);
                    constants.add(String.valueOf(f.get(null)));
                }
            }
        }
        assertThat(constants).noneMatch(s -> s.contains("ThreadlessExecutor"));
    }

    private static void check(final Class<?> type, final List<String> reactive)
    {
        final String name = type.getName();
        if (name.startsWith("reactor.") || name.startsWith("org.reactivestreams."))
        {
            reactive.add(name);
        }
    }
}
