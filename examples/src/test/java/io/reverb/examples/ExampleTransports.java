package io.reverb.examples;

import io.reverb.rpc.transport.TransportProvider;
import io.reverb.rpc.transport.Transports;
import org.junit.jupiter.api.Assumptions;

import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;

/**
 * The transports the example tests run over: rpc-core's {@code inproc://} always, and {@code shm://}
 * (the examples' default) when an rpc transport for it is registered and available on this machine;
 * otherwise its tests are skipped with the reason.
 */
public final class ExampleTransports
{
    private static final AtomicInteger NEXT_NAME = new AtomicInteger();

    private ExampleTransports()
    {
    }

    /**
     * @return the schemes to run over, for {@code @MethodSource}.
     */
    public static Stream<String> schemes()
    {
        return Stream.of("inproc", "shm");
    }

    /**
     * Skips the calling test when the scheme has no available transport, and otherwise names a fresh
     * endpoint for it.
     *
     * @param scheme {@code inproc} or {@code shm}.
     * @param name   a name for the endpoint, made unique per call.
     * @return a URI such as {@code inproc://hello-3}.
     */
    public static String uri(final String scheme, final String name)
    {
        final List<TransportProvider> providers = Transports.providers().stream()
            .filter(provider -> provider.scheme().equals(scheme))
            .toList();
        Assumptions.assumeFalse(providers.isEmpty(),
            "no rpc transport is registered for " + scheme + "://");
        Assumptions.assumeTrue(providers.stream().anyMatch(TransportProvider::isAvailable),
            () -> scheme + ":// is not available here: " + providers.get(0).unavailabilityCause());
        return scheme + "://reverb-example-" + name + "-" + ProcessHandle.current().pid() + "-" + NEXT_NAME.incrementAndGet();
    }
}
