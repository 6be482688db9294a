package io.reverb.rpc.lb;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.Int32Value;
import com.google.protobuf.StringValue;
import io.reverb.rpc.CallOptions;
import io.reverb.rpc.ClientCallContext;
import io.reverb.rpc.ClientInterceptor;
import io.reverb.rpc.ConnectivityState;
import io.reverb.rpc.RetryPolicy;
import io.reverb.rpc.RpcChannel;
import io.reverb.rpc.RpcServer;
import io.reverb.rpc.TestService;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * {@link RpcChannel} has one implementation, whichever way it was built (one address, several, a resolver target,
 * balancing settings), and none of its public methods throws because of how it was built: each is called here on
 * channels built every way.
 */
class OneChannelImplementationTest
{
    private static final AtomicInteger IDS = new AtomicInteger();
    private static final Duration TIMEOUT = Duration.ofSeconds(20);
    private final List<AutoCloseable> closeables = new ArrayList<>();

    @AfterEach
    void close() throws Exception
    {
        for (int i = closeables.size() - 1; i >= 0; i--)
        {
            closeables.get(i).close();
        }
    }

    private String server()
    {
        final String uri = "inproc://one-implementation-" + IDS.incrementAndGet();
        final RpcServer server = RpcServer.builder(uri).addService(new TestService()).build().start();
        closeables.add(() -> server.shutdown(Duration.ZERO));
        return uri;
    }

    @Test
    void shouldHaveExactlyOneImplementationInRpcCore() throws Exception
    {
        final Path classes = Path.of(RpcChannel.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        final List<String> implementations = new ArrayList<>();
        try (Stream<Path> files = Files.walk(classes))
        {
            for (final Path file : files.filter(f -> f.toString().endsWith(".class")).collect(Collectors.toList()))
            {
                final String name = classes.relativize(file).toString().replace(".class", "").replace('/', '.');
                final Class<?> type = Class.forName(name, false, RpcChannel.class.getClassLoader());
                if (type != RpcChannel.class && RpcChannel.class.isAssignableFrom(type))
                {
                    implementations.add(name);
                }
            }
        }
        assertThat(implementations).containsExactly(BalancedChannel.class.getName());
    }

    @Test
    void shouldOfferNoMethodThatOnlySomeChannelsSupport()
    {
        final Set<String> methods = new TreeSet<>();
        for (final Method method : RpcChannel.class.getDeclaredMethods())
        {
            if (Modifier.isPublic(method.getModifiers()) && !Modifier.isStatic(method.getModifiers()))
            {
                methods.add(method.getName());
                assertThat(method.getParameterTypes()).as(method.toString()).doesNotContain(ClientCallContext.class);
            }
        }
        // exactly the methods the next test calls on every kind of channel: a new one must be added there too
        assertThat(methods).containsExactly("close", "fabric", "isClosed", "newCall", "newUnaryCall",
            "notifyWhenStateChanged", "state", "uri");
    }

    @Test
    void shouldRunEveryPublicMethodOnChannelsBuiltEveryWay() throws Exception
    {
        final String a = server();
        final String b = server();
        final Map<String, Supplier<RpcChannel.Builder>> ways = new LinkedHashMap<>();
        ways.put("one address", () -> RpcChannel.builder(a));
        ways.put("a list of one", () -> RpcChannel.builder(List.of(a)));
        ways.put("several addresses", () -> RpcChannel.builder(List.of(a, b)));
        ways.put("a resolver target", () -> RpcChannel.builder("static:" + a + "," + b));
        ways.put("round_robin", () -> RpcChannel.builder(a).loadBalancingPolicy("round_robin"));
        ways.put("health checked", () -> RpcChannel.builder(List.of(a, b)).healthCheck(""));
        ways.put("a retry policy", () -> RpcChannel.builder(a).retryPolicy(TestService.SERVICE, RetryPolicy.builder().build()));
        ways.put("a default deadline and an interceptor", () -> RpcChannel.builder(List.of(a, b))
            .defaultDeadline(TIMEOUT).intercept(new ClientInterceptor()
            {
                @Override
                public <Req, Resp> Flux<Resp> interceptCall(final ClientCallContext call, final Flux<Req> requests,
                    final Next<Req, Resp> next)
                {
                    return next.call(requests);
                }
            }));
        for (final Map.Entry<String, Supplier<RpcChannel.Builder>> way : ways.entrySet())
        {
            final RpcChannel channel = way.getValue().get().build();
            final String what = way.getKey();
            assertThat(channel).as(what).isInstanceOf(BalancedChannel.class);
            assertThat(channel.uri()).as(what).isNotEmpty();
            assertThat(channel.state(true)).as(what).isNotNull();
            assertThat(channel.newUnaryCall(TestService.ECHO, CallOptions.DEFAULT.withWaitForReady(), StringValue.of("u"))
                .block(TIMEOUT)).as(what).isNotNull();
            assertThat(channel.newCall(TestService.RANGE, CallOptions.DEFAULT.withWaitForReady(), Mono.just(Int32Value.of(3)))
                .collectList().block(TIMEOUT)).as(what).hasSize(3);
            assertThat(channel.state(false)).as(what).isEqualTo(ConnectivityState.READY);
            assertThat(channel.fabric()).as(what).isEqualTo("inproc");
            final CountDownLatch left = new CountDownLatch(1);
            channel.notifyWhenStateChanged(ConnectivityState.READY, left::countDown);
            assertThat(channel.isClosed()).as(what).isFalse();
            channel.close();
            assertThat(channel.isClosed()).as(what).isTrue();
            assertThat(channel.state(false)).as(what).isEqualTo(ConnectivityState.SHUTDOWN);
            assertThat(channel.fabric()).as(what + ": no connection once closed").isNull();
            assertThat(left.await(TIMEOUT.toSeconds(), TimeUnit.SECONDS)).as(what + ": told it left READY").isTrue();
            final CountDownLatch already = new CountDownLatch(1);
            channel.notifyWhenStateChanged(ConnectivityState.READY, already::countDown);
            assertThat(already.getCount()).as(what + ": told at once").isZero();
        }
    }
}
