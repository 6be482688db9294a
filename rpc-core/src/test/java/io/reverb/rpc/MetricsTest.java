package io.reverb.rpc;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.StringValue;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.reverb.rpc.stub.ClientCalls;
import java.io.File;
import java.lang.ref.WeakReference;
import java.net.URL;
import java.net.URLClassLoader;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import reactor.core.Disposable;
import reactor.test.StepVerifier;

class MetricsTest
{
    @Test
    void shouldRecordCallTimersByMethodAndStatusOnBothSides() throws Exception
    {
        final SimpleMeterRegistry registry = new SimpleMeterRegistry();
        final TestService service = new TestService();
        try (RpcServer server = RpcServer.builder("inproc://metrics").addService(service).meterRegistry(registry).build().start();
            RpcChannel channel = RpcChannel.builder("inproc://metrics").meterRegistry(registry).build())
        {
            StepVerifier.create(ClientCalls.unary(channel, TestService.ECHO, CallOptions.DEFAULT, StringValue.of("a")))
                .expectNextCount(1).expectComplete().verify(Duration.ofSeconds(20));
            StepVerifier.create(ClientCalls.unary(channel, TestService.ECHO,
                    CallOptions.DEFAULT.withDeadlineAfter(Duration.ofMillis(200)), StringValue.of("sleep")))
                .expectError(RpcException.class).verify(Duration.ofSeconds(20));
            assertThat(timerCount(registry, "reverb.client.calls", "OK")).isEqualTo(1);
            assertThat(timerCount(registry, "reverb.client.calls", "DEADLINE_EXCEEDED")).isEqualTo(1);
            // the server ends the call by its own timer, shortly after the client gave up
            final long until = System.nanoTime() + Duration.ofSeconds(20).toNanos();
            while (timerCount(registry, "reverb.server.calls", "DEADLINE_EXCEEDED") == 0 && System.nanoTime() < until)
            {
                Thread.sleep(10);
            }
            assertThat(timerCount(registry, "reverb.server.calls", "OK")).isEqualTo(1);
            assertThat(timerCount(registry, "reverb.server.calls", "DEADLINE_EXCEEDED")).isEqualTo(1);
            assertThat(registry.get("reverb.server.message.size").tag("direction", "received").summary().count()).isEqualTo(2);
        }
    }

    @Test
    void shouldReadServerCallsActiveFromTheCountersAfterAGarbageCollection() throws Exception
    {
        final SimpleMeterRegistry registry = new SimpleMeterRegistry();
        try (RpcServer server = RpcServer.builder("inproc://metrics-active").addService(new TestService())
            .meterRegistry(registry).build().start())
        {
            // a gauge holds its source weakly unless told otherwise: the server's (a method reference) must survive
            final WeakReference<Object> collected = new WeakReference<>(new Object());
            for (int i = 0; i < 50 && collected.get() != null; i++)
            {
                System.gc();
            }
            assertThat(collected.get()).as("a garbage collection ran").isNull();
            assertThat(registry.get("reverb.server.calls.active").gauge().value()).isZero();
        }
    }

    @Test
    void shouldCountTheCallsInFlightOfEveryChannelOnOneRegistry() throws Exception
    {
        final SimpleMeterRegistry registry = new SimpleMeterRegistry();
        try (RpcServer server = RpcServer.builder("inproc://metrics-two-channels").addService(new TestService()).build()
            .start();
            RpcChannel first = RpcChannel.builder("inproc://metrics-two-channels").meterRegistry(registry).build();
            RpcChannel second = RpcChannel.builder("inproc://metrics-two-channels").meterRegistry(registry).build())
        {
            // calls that never answer ("sleep"), two on the first channel and one on the second
            final List<Disposable> calls = new ArrayList<>();
            for (final RpcChannel channel : List.of(first, first, second))
            {
                calls.add(ClientCalls.unary(channel, TestService.ECHO, CallOptions.DEFAULT, StringValue.of("sleep"))
                    .subscribe(r -> { }, e -> { }));
            }
            assertThat(registry.find("reverb.client.calls.active").gauges()).as("one gauge").hasSize(1);
            assertThat(registry.get("reverb.client.calls.active").gauge().value()).isEqualTo(3);
            calls.forEach(Disposable::dispose); // cancelled: each call ends
            assertThat(registry.get("reverb.client.calls.active").gauge().value()).isZero();
        }
    }

    private static long timerCount(final SimpleMeterRegistry registry, final String name, final String status)
    {
        final Timer timer = registry.find(name).tag("status", status).timer();
        return timer == null ? 0 : timer.count();
    }

    @Test
    void shouldRunWithoutMicrometerOnTheClassPath() throws Exception
    {
        final String classPath = System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
        final List<URL> urls = new ArrayList<>();
        for (final String entry : classPath.split(File.pathSeparator))
        {
            if (!entry.contains("micrometer") && !entry.isEmpty())
            {
                urls.add(new File(entry).toURI().toURL());
            }
        }
        try (URLClassLoader isolated = new URLClassLoader(urls.toArray(new URL[0]), ClassLoader.getPlatformClassLoader()))
        {
            assertThat(classExists(isolated, "io.micrometer.core.instrument.MeterRegistry")).isFalse();
            final Object result = isolated.loadClass(NoMicrometerProbe.class.getName()).getMethod("run").invoke(null);
            assertThat(result).isEqualTo("pong");
        }
    }

    private static boolean classExists(final ClassLoader loader, final String name)
    {
        try
        {
            Class.forName(name, false, loader);
            return true;
        }
        catch (final ClassNotFoundException e)
        {
            return false;
        }
    }
}
