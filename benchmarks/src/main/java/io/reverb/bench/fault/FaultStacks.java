package io.reverb.bench.fault;

import io.reverb.rpc.transport.Transports;

import java.io.IOException;
import java.net.URI;
import java.time.Duration;
import java.util.concurrent.ScheduledExecutorService;

/**
 * Starts servers and connects clients of each {@link FaultStack}, the same service and settings for all three
 * ({@link NativeStack}, {@link GrpcStack}).
 */
public final class FaultStacks
{
    private FaultStacks()
    {
    }

    /**
     * Client settings shared by every stack.
     *
     * @param keepAlive        keep-alive interval (grpc-java over Netty raises anything below 10 s to 10 s).
     * @param keepAliveTimeout how long a keep-alive PING may go unanswered.
     */
    public record ClientSettings(Duration keepAlive, Duration keepAliveTimeout)
    {
    }

    /**
     * @param stack  the stack.
     * @param uri    where to listen: {@code tcp://host:port} or {@code shm://name} (Netty: tcp only).
     * @param delay  how long the handler takes to answer.
     * @param ledger counts the handler's calls.
     * @param timer  runs the delayed answers.
     * @return the started server.
     * @throws IOException if it cannot listen.
     */
    public static FaultStack.Server startServer(final FaultStack stack, final String uri, final Duration delay,
        final HandlerLedger ledger, final ScheduledExecutorService timer) throws IOException
    {
        return switch (stack)
        {
            case NATIVE -> NativeStack.startServer(uri, delay, ledger, timer);
            case GRPC_REVERB -> GrpcStack.startServer(true, uri, delay, ledger, timer);
            case GRPC_NETTY -> GrpcStack.startServer(false, requireTcp(uri, stack), delay, ledger, timer);
        };
    }

    /**
     * @param stack    the stack.
     * @param uri      the server's address.
     * @param settings keep-alive settings.
     * @return a client (its channel connects on the first call).
     */
    public static FaultStack.Client connect(final FaultStack stack, final String uri, final ClientSettings settings)
    {
        return switch (stack)
        {
            case NATIVE -> NativeStack.connect(uri, settings);
            case GRPC_REVERB -> GrpcStack.connect(true, uri, settings);
            case GRPC_NETTY -> GrpcStack.connect(false, requireTcp(uri, stack), settings);
        };
    }

    private static String requireTcp(final String uri, final FaultStack stack)
    {
        final URI parsed = URI.create(uri);
        if (!"tcp".equals(parsed.getScheme()) || parsed.getHost() == null || parsed.getPort() <= 0)
        {
            throw new IllegalArgumentException(stack.cliName() + " needs tcp://host:port, not " + uri);
        }
        return uri;
    }

    /**
     * @param uri a Reverb address, or null for Netty.
     * @return the registered buffers in use of the Reverb transport serving {@code uri} in this process; -1 for null.
     */
    static long buffersInUse(final String uri)
    {
        return uri == null ? -1 : Transports.providerFor(Transports.parse(uri)).resourceUsage().buffersInUse();
    }
}
