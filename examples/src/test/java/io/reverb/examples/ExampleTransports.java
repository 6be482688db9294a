package io.reverb.examples;

import io.reverb.rpc.transport.TransportProvider;
import io.reverb.rpc.transport.Transports;
import org.junit.jupiter.api.Assumptions;

import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;

/**
 * The transports the example tests run over: rpc-core's {@code inproc://} always; {@code shm://} (the
 * examples' default) and {@code tcp://} (loopback) when an rpc transport for them is registered and
 * available on this machine, otherwise their tests are skipped with the reason. Tests connect to
 * {@code server.address()}, which names the port a {@code tcp://127.0.0.1:0} server was given.
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
        return Stream.of("inproc", "shm", "tcp");
    }

    /**
     * Skips the calling test when the scheme has no available transport, and otherwise names a fresh
     * endpoint for it.
     *
     * @param scheme {@code inproc}, {@code shm} or {@code tcp}.
     * @param name   a name for the endpoint, made unique per call (ignored for tcp).
     * @return a URI to listen on, such as {@code inproc://reverb-example-hello-1234-3} or {@code tcp://127.0.0.1:0}.
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
        if ("tcp".equals(scheme))
        {
            return "tcp://127.0.0.1:0";
        }
        return scheme + "://reverb-example-" + name + "-" + ProcessHandle.current().pid() + "-" + NEXT_NAME.incrementAndGet();
    }
}
