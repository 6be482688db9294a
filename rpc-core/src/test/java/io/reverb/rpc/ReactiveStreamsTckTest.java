package io.reverb.rpc;

import com.google.protobuf.Int64Value;
import io.reverb.rpc.stub.ClientCalls;
import io.reverb.rpc.stub.ServerCalls;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;
import org.reactivestreams.Publisher;
import org.reactivestreams.Subscriber;
import org.reactivestreams.tck.PublisherVerification;
import org.reactivestreams.tck.SubscriberBlackboxVerification;
import org.reactivestreams.tck.TestEnvironment;
import org.testng.SkipException;
import org.testng.annotations.AfterClass;
import org.testng.annotations.BeforeClass;
import org.testng.annotations.BeforeMethod;
import org.testng.annotations.Test;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * The Reactive Streams TCK (1.0.4) against the publishers a caller gets from Reverb: a server-streaming call's
 * {@code Flux} and a unary call's {@code Mono}, over {@code inproc://}. Each TCK rule runs as a test of its own; the
 * TCK's optional rules and those it cannot check here end skipped (TestNG's {@link SkipException}, reported as
 * skipped, with the TCK's reason).
 *
 * <p>The TCK is written for TestNG; its verifications are plain objects whose rules are public methods, so this runs
 * them under JUnit: {@code setUp()} before each rule, as TestNG's {@code @BeforeMethod} would.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class ReactiveStreamsTckTest
{
    private static final AtomicInteger IDS = new AtomicInteger();
    /** Streams 0..n-1; n = Long.MAX_VALUE streams for ever (until cancelled). */
    private static final MethodDescriptor<Int64Value, Int64Value> COUNT = TestService.method("Count",
        MethodDescriptor.MethodType.SERVER_STREAMING, Int64Value.getDefaultInstance(), Int64Value.getDefaultInstance());
    /** Fails at once. */
    private static final MethodDescriptor<Int64Value, Int64Value> FAIL = TestService.method("Fail",
        MethodDescriptor.MethodType.SERVER_STREAMING, Int64Value.getDefaultInstance(), Int64Value.getDefaultInstance());
    /** Answers its request. */
    private static final MethodDescriptor<Int64Value, Int64Value> ECHO = TestService.method("Echo",
        MethodDescriptor.MethodType.UNARY, Int64Value.getDefaultInstance(), Int64Value.getDefaultInstance());
    /** Fails at once. */
    private static final MethodDescriptor<Int64Value, Int64Value> FAIL_UNARY = TestService.method("FailUnary",
        MethodDescriptor.MethodType.UNARY, Int64Value.getDefaultInstance(), Int64Value.getDefaultInstance());

    /** Hands its requests' Flux to the test ({@link #handed}) and answers when the test cancels the call. */
    private static final MethodDescriptor<Int64Value, Int64Value> TAKE = TestService.method("Take",
        MethodDescriptor.MethodType.CLIENT_STREAMING, Int64Value.getDefaultInstance(), Int64Value.getDefaultInstance());

    /** Counts its requests. */
    private static final MethodDescriptor<Int64Value, Int64Value> COUNT_REQUESTS = TestService.method("CountRequests",
        MethodDescriptor.MethodType.CLIENT_STREAMING, Int64Value.getDefaultInstance(), Int64Value.getDefaultInstance());
    /** Answers with a publisher that hands the server's subscriber to the test ({@link #responseSubscribers}). */
    private static final MethodDescriptor<Int64Value, Int64Value> GIVE = TestService.method("Give",
        MethodDescriptor.MethodType.SERVER_STREAMING, Int64Value.getDefaultInstance(), Int64Value.getDefaultInstance());

    /** Generous for a loaded 2-core machine: how long the TCK waits for a signal it expects. */
    private static final long TIMEOUT_MILLIS = 2_000;
    /** How long the TCK watches for a signal it must not see. */
    private static final long NO_SIGNALS_MILLIS = 200;
    /** How long a cancelled call may keep its subscriber reachable (rule 3.13). */
    private static final long GC_TIMEOUT_MILLIS = 5_000;

    private RpcServer server;
    private RpcChannel channel;
    /** The request Flux of each {@link #TAKE} call, as its handler received it. */
    private final BlockingQueue<Flux<Int64Value>> handed = new LinkedBlockingQueue<>();
    /** The calls a rule started, cancelled after it. */
    private final Queue<Disposable> calls = new ConcurrentLinkedQueue<>();
    /** The server's subscriber to each {@link #GIVE} handler's responses. */
    private final BlockingQueue<Subscriber<? super Int64Value>> responseSubscribers = new LinkedBlockingQueue<>();
    /** TCK verifications whose TestNG {@code @AfterClass} methods run at the end. */
    private final List<Object> verifications = new ArrayList<>();

    @BeforeAll
    void start()
    {
        final String uri = "inproc://tck-" + IDS.incrementAndGet();
        server = RpcServer.builder(uri).addService(ServiceDefinition.builder(TestService.SERVICE)
            .addMethod(COUNT, ServerCalls.serverStreaming(ReactiveStreamsTckTest::count))
            .addMethod(FAIL, ServerCalls.serverStreaming(n -> Flux.error(
                new RpcException(Status.FAILED_PRECONDITION.withDescription("refused by the test")))))
            .addMethod(TAKE, ServerCalls.clientStreaming(requests ->
            {
                handed.add(requests);
                return Mono.never();
            }))
            .addMethod(COUNT_REQUESTS, ServerCalls.clientStreaming(requests -> requests.count().map(Int64Value::of)))
            .addMethod(GIVE, ServerCalls.serverStreaming(n -> Flux.from((Publisher<Int64Value>)responseSubscribers::add)))
            .addMethod(ECHO, ServerCalls.unary(Mono::just))
            .addMethod(FAIL_UNARY, ServerCalls.unary(n -> Mono.error(
                new RpcException(Status.FAILED_PRECONDITION.withDescription("refused by the test")))))
            .build()).build().start();
        channel = RpcChannel.builder(uri).build();
    }

    @AfterAll
    void stop() throws Exception
    {
        for (final Object verification : verifications)
        {
            for (final Method m : verification.getClass().getMethods())
            {
                if (m.isAnnotationPresent(AfterClass.class))
                {
                    m.invoke(verification);
                }
            }
        }
        if (channel != null)
        {
            channel.close();
        }
        if (server != null)
        {
            server.close();
        }
    }

    private static Flux<Int64Value> count(final Int64Value request)
    {
        final long n = request.getValue();
        if (n == 0)
        {
            return Flux.empty();
        }
        return Flux.generate(() -> 0L, (i, sink) ->
        {
            sink.next(Int64Value.of(i));
            if (n != Long.MAX_VALUE && i + 1 == n)
            {
                sink.complete();
            }
            return i + 1;
        });
    }

    @TestFactory
    Stream<DynamicTest> serverStreamingFlux()
    {
        return rules(new PublisherVerification<Int64Value>(environment(), GC_TIMEOUT_MILLIS)
        {
            @Override
            public Publisher<Int64Value> createPublisher(final long elements)
            {
                return ClientCalls.serverStreaming(channel, COUNT, CallOptions.DEFAULT, Int64Value.of(elements));
            }

            @Override
            public Publisher<Int64Value> createFailedPublisher()
            {
                return ClientCalls.serverStreaming(channel, FAIL, CallOptions.DEFAULT, Int64Value.of(1));
            }
        });
    }

    @TestFactory
    Stream<DynamicTest> unaryMono()
    {
        return rules(new PublisherVerification<Int64Value>(environment(), GC_TIMEOUT_MILLIS)
        {
            @Override
            public Publisher<Int64Value> createPublisher(final long elements)
            {
                if (elements != 1)
                {
                    // a unary call has exactly one response: a rule that needs none (or more) does not apply
                    throw new SkipException("a unary call's Mono has exactly one element, not " + elements);
                }
                return ClientCalls.unary(channel, ECHO, CallOptions.DEFAULT, Int64Value.of(7));
            }

            @Override
            public long maxElementsFromPublisher()
            {
                return 1;
            }

            @Override
            public Publisher<Int64Value> createFailedPublisher()
            {
                return ClientCalls.unary(channel, FAIL_UNARY, CallOptions.DEFAULT, Int64Value.of(1));
            }
        });
    }

    /**
     * The Flux a client-streaming handler gets on the server: a client sends {@code elements} requests (for ever for
     * Long.MAX_VALUE, as the server's demand lets it), and the TCK subscribes to what the handler received.
     */
    @TestFactory
    Stream<DynamicTest> serverRequestFlux()
    {
        return rules(new PublisherVerification<Int64Value>(environment(), GC_TIMEOUT_MILLIS)
        {
            @Override
            public Publisher<Int64Value> createPublisher(final long elements)
            {
                final Flux<Int64Value> requests = Flux.generate(() -> 0L, (i, sink) ->
                {
                    if (elements != Long.MAX_VALUE && i >= elements)
                    {
                        sink.complete();
                    }
                    else
                    {
                        sink.next(Int64Value.of(i));
                    }
                    return i + 1;
                });
                calls.add(ClientCalls.clientStreaming(channel, TAKE, CallOptions.DEFAULT, requests)
                    .subscribe(ignored -> { }, ignored -> { }));
                try
                {
                    final Flux<Int64Value> received = handed.poll(TIMEOUT_MILLIS * 5, TimeUnit.MILLISECONDS);
                    if (received == null)
                    {
                        throw new IllegalStateException("the handler did not run");
                    }
                    return received;
                }
                catch (final InterruptedException e)
                {
                    Thread.currentThread().interrupt();
                    throw new IllegalStateException(e);
                }
            }

            @Override
            public Publisher<Int64Value> createFailedPublisher()
            {
                return null; // a handler's request Flux fails only after the call started: no "failed" publisher
            }
        }, this::cancelCalls);
    }

    /** The client's subscriber to a client-streaming call's requests (what it does with a caller's publisher). */
    @TestFactory
    Stream<DynamicTest> clientRequestSubscriber()
    {
        return rules(new SubscriberBlackboxVerification<Int64Value>(environment())
        {
            @Override
            public Subscriber<Int64Value> createSubscriber()
            {
                final BlockingQueue<Subscriber<? super Int64Value>> subscribed = new LinkedBlockingQueue<>();
                calls.add(ClientCalls.clientStreaming(channel, COUNT_REQUESTS, CallOptions.DEFAULT,
                    Flux.from((Publisher<Int64Value>)subscribed::add)).subscribe(ignored -> { }, ignored -> { }));
                return take(subscribed, "the call did not subscribe to its requests");
            }

            @Override
            public Int64Value createElement(final int element)
            {
                return Int64Value.of(element);
            }
        }, this::cancelCalls);
    }

    /** The server's subscriber to a server-streaming handler's responses. */
    @TestFactory
    Stream<DynamicTest> serverResponseSubscriber()
    {
        return rules(new SubscriberBlackboxVerification<Int64Value>(environment())
        {
            @Override
            public Subscriber<Int64Value> createSubscriber()
            {
                calls.add(ClientCalls.serverStreaming(channel, GIVE, CallOptions.DEFAULT, Int64Value.of(1))
                    .subscribe(ignored -> { }, ignored -> { }));
                return take(responseSubscribers, "the handler's responses were not subscribed to");
            }

            @Override
            public Int64Value createElement(final int element)
            {
                return Int64Value.of(element);
            }
        }, this::cancelCalls);
    }

    @SuppressWarnings("unchecked")
    private static <T> Subscriber<T> take(final BlockingQueue<Subscriber<? super T>> queue, final String failure)
    {
        try
        {
            final Subscriber<? super T> subscriber = queue.poll(TIMEOUT_MILLIS * 5, TimeUnit.MILLISECONDS);
            if (subscriber == null)
            {
                throw new IllegalStateException(failure);
            }
            return (Subscriber<T>)subscriber;
        }
        catch (final InterruptedException e)
        {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    /**
     * Cancels the calls the rule started, and waits until the server has acted on the cancels: a call's CANCEL ends the
     * handler's request Flux (with CANCELLED, to a subscriber of the rule that did not cancel it), and that signal must
     * reach the rule's TCK environment before the next rule starts, not in the middle of it. One connection delivers
     * in order: a unary call's answer comes after the server handled every CANCEL sent before it.
     */
    private void cancelCalls()
    {
        boolean any = false;
        for (Disposable call = calls.poll(); call != null; call = calls.poll())
        {
            call.dispose();
            any = true;
        }
        if (any)
        {
            ClientCalls.unary(channel, ECHO, CallOptions.DEFAULT, Int64Value.of(0))
                .block(Duration.ofMillis(TIMEOUT_MILLIS * 5));
        }
    }

    private static TestEnvironment environment()
    {
        return new TestEnvironment(TIMEOUT_MILLIS, NO_SIGNALS_MILLIS);
    }

    /**
     * @param verification a TCK verification.
     * @return one test per rule (each public method TestNG would run), in name order.
     */
    private Stream<DynamicTest> rules(final Object verification)
    {
        return rules(verification, () -> { });
    }

    /**
     * @param verification a TCK verification: its TestNG {@code @BeforeClass} methods run now, its
     *                     {@code @BeforeMethod} ones before each rule, its {@code @AfterClass} ones at the end.
     * @param after        run after each rule.
     * @return one test per rule (each public method TestNG would run), in name order.
     */
    private Stream<DynamicTest> rules(final Object verification, final Runnable after)
    {
        verifications.add(verification);
        final Method[] methods = verification.getClass().getMethods();
        final List<Method> beforeEach = new ArrayList<>();
        for (final Method m : methods)
        {
            if (m.isAnnotationPresent(BeforeClass.class))
            {
                invoke(verification, m);
            }
            if (m.isAnnotationPresent(BeforeMethod.class))
            {
                beforeEach.add(m);
            }
        }
        return Arrays.stream(methods)
            // the TCK's untested_* rules only say "not verified by this TCK": they check nothing
            .filter(m -> m.isAnnotationPresent(Test.class) && !Modifier.isStatic(m.getModifiers()) &&
                !m.getName().startsWith("untested_"))
            .sorted(Comparator.comparing(Method::getName))
            .map(m -> DynamicTest.dynamicTest(m.getName(), () ->
            {
                try
                {
                    for (final Method before : beforeEach)
                    {
                        before.invoke(verification);
                    }
                    runRule(verification, m);
                }
                finally
                {
                    after.run();
                }
            }));
    }

    private static void invoke(final Object target, final Method method)
    {
        try
        {
            method.invoke(target);
        }
        catch (final ReflectiveOperationException e)
        {
            throw new IllegalStateException(e);
        }
    }

    private static void runRule(final Object verification, final Method rule) throws Throwable
    {
        try
        {
            rule.invoke(verification);
        }
        catch (final InvocationTargetException e)
        {
            final Throwable cause = e.getCause();
            if (cause instanceof SkipException)
            {
                // an optional rule, or one this publisher cannot meet by its nature (a unary Mono has one element):
                // nothing here can make it run
                Assumptions.abort("TCK rule " + rule.getName() + " does not apply here (the TCK's reason: " +
                    cause.getMessage() + "); nothing to install or configure");
            }
            throw cause;
        }
    }
}
