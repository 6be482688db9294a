// CHECKSTYLE.OFF: PackageName - grpc-java's package: AbstractInteropTest gives the server's address only there
package io.grpc.testing.integration;
// CHECKSTYLE.ON: PackageName

import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
import io.grpc.ClientStreamTracer;
import io.grpc.Context;
import io.grpc.ManagedChannel;
import io.grpc.ManagedChannelBuilder;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.ServerBuilder;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.ServerStreamTracer;
import io.grpc.testing.integration.Messages.SimpleRequest;
import io.reverb.grpc.ReverbChannelBuilder;
import io.reverb.grpc.ReverbServerBuilder;
import io.reverb.rpc.transport.ResourceUsage;
import io.reverb.rpc.transport.Transports;
import org.junit.After;
import org.junit.Test;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.logging.Level;
import java.util.logging.Logger;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

/**
 * grpc-java's own interop test cases ({@link AbstractInteropTest}: the cases every grpc-java transport passes, as
 * its Netty, OkHttp and in-process tests run them) over a Reverb transport: grpc-java's channel and server built with
 * {@link ReverbChannelBuilder} and {@link ReverbServerBuilder}, grpc-java's {@code TestServiceImpl} behind it. The
 * cases check what a grpc-java user sees: statuses and their descriptions, metadata, deadlines, cancellation, flow
 * control, message limits, compression, the transport's addresses, and what the stream tracers (the hooks of
 * grpc-java's census and OpenTelemetry modules) are told about each message and each call's end.
 * <p>
 * After each case every registered buffer and credit of the transport must be back, as in the conformance suite.
 * It lives in grpc-java's package because the base class gives the server's bound address only there (a tcp server
 * binds an ephemeral port).
 */
public abstract class AbstractReverbInteropTest extends AbstractInteropTest
{
    private static final int SOAK_ITERATIONS = 200;
    private static final int SOAK_THREADS = 4;
    private static final int SOAK_NO_LATENCY_BOUND_MS = 60_000;
    private static final int SOAK_TIMEOUT_SECONDS = 120;
    /** Held, so that the level set on it stays (java.util.logging keeps loggers weakly). */
    private static final Logger SOAK_LOG = Logger.getLogger(SoakClient.class.getName());

    /** The header census propagates a call's tags in (binary). */
    private static final Metadata.Key<byte[]> TAGS = Metadata.Key.of("grpc-tags-bin", Metadata.BINARY_BYTE_MARSHALLER);
    /** Where the server's tracer puts them, as census's does. */
    private static final Context.Key<byte[]> PROPAGATED = Context.key("reverb-interop-tags");

    /** The context the server's last call ran its handler in. */
    private final AtomicReference<Context> handlerContext = new AtomicReference<>();
    private String address;

    /**
     * @return a fresh server address of this transport.
     */
    protected abstract String newAddress();

    /**
     * @param builder the server's builder, its address and message limit set.
     * @return it, with what this transport needs besides (engine settings: TLS).
     */
    protected ReverbServerBuilder configure(final ReverbServerBuilder builder)
    {
        return builder;
    }

    /**
     * @param builder a channel's builder, its target and message limit set.
     * @return it, with what this transport needs besides.
     */
    protected ReverbChannelBuilder configure(final ReverbChannelBuilder builder)
    {
        return builder;
    }

    @Override
    protected ServerBuilder<?> getServerBuilder()
    {
        address = newAddress();
        return configure(ReverbServerBuilder.forAddress(address).maxInboundMessageSize(MAX_MESSAGE_SIZE))
            .addStreamTracerFactory(new ServerStreamTracer.Factory()
            {
                @Override
                public ServerStreamTracer newServerStreamTracer(final String fullMethodName, final Metadata headers)
                {
                    final byte[] tags = headers.get(TAGS);
                    return new ServerStreamTracer()
                    {
                        @Override
                        public Context filterContext(final Context context)
                        {
                            return tags == null ? context : context.withValue(PROPAGATED, tags);
                        }
                    };
                }
            })
            .intercept(new ServerInterceptor()
            {
                @Override
                public <Q, R> ServerCall.Listener<Q> interceptCall(final ServerCall<Q, R> call, final Metadata headers,
                    final ServerCallHandler<Q, R> next)
                {
                    handlerContext.set(Context.current());
                    return next.startCall(call, headers);
                }
            });
    }

    @Override
    protected ManagedChannelBuilder<?> createChannelBuilder()
    {
        return configure(ReverbChannelBuilder.forTarget(getListenAddress().toString())
            .maxInboundMessageSize(MAX_MESSAGE_SIZE));
    }

    @Override
    protected boolean metricsExpected()
    {
        // census's records need grpc-census on the class path, and with it there grpc-java turns its own census on
        // in every channel and server of this module's tests (the allocation and interceptor tests among them); the
        // tracers' events, which census and OpenTelemetry read, are checked by every case all the same
        return false;
    }

    /**
     * What grpc-java's case checks of a transport, without census: its base needs grpc-census and OpenCensus's
     * implementation with grpc-java's built-in census off, an internal builder hook ({@code setStatsEnabled}) that
     * Reverb's builders do not offer (see {@link #metricsExpected}). Census propagates a call's context as census
     * does it here: a client stream tracer factory adds a binary header ({@code grpc-tags-bin}) when the stream is
     * made, the server's tracer factory reads it from the headers the stream arrived with and puts it into the call's
     * {@code Context} ({@code filterContext}); the handler's context must hold it.
     */
    @Override
    @Test
    public void censusContextsPropagated()
    {
        final byte[] tags = {0, 1, 2, (byte)0xFF, 'e', 'x', 't', 'r', 'a'};
        final ClientStreamTracer.Factory addsTags = new ClientStreamTracer.Factory()
        {
            @Override
            public ClientStreamTracer newClientStreamTracer(final ClientStreamTracer.StreamInfo info,
                final Metadata headers)
            {
                headers.put(TAGS, tags);
                return new ClientStreamTracer()
                {
                };
            }
        };
        blockingStub.withInterceptors(new ClientInterceptor()
        {
            @Override
            public <Q, R> ClientCall<Q, R> interceptCall(final MethodDescriptor<Q, R> method,
                final CallOptions options, final Channel next)
            {
                return next.newCall(method, options.withStreamTracerFactory(addsTags));
            }
        }).unaryCall(SimpleRequest.getDefaultInstance());
        final Context handlers = handlerContext.get();
        assertNotNull("the handler's context", handlers);
        assertArrayEquals("the tags the client's tracer added, in the handler's context", tags,
            PROPAGATED.get(handlers));
    }

    /**
     * A gzip-compressed request, then a plain one, each answered in full. Without the probe (an uncompressed message
     * that claims to be compressed, refused INVALID_ARGUMENT by servers that check it): grpc-java's own
     * {@code TestServiceImpl} does not check it.
     */
    @Test
    public void clientCompressedUnaryWithoutProbe() throws Exception
    {
        clientCompressedUnary(false);
    }

    /** The streaming form of {@link #clientCompressedUnaryWithoutProbe}. */
    @Test
    public void clientCompressedStreamingWithoutProbe() throws Exception
    {
        clientCompressedStreaming(false);
    }

    /**
     * grpc-java's {@code rpc_soak} case: 4 threads call one channel 200 times in all (271,828-byte requests,
     * 314,159-byte responses). Every call must succeed; its latency bound is set out of reach (a loaded CI machine),
     * so this counts, not times.
     */
    @Test
    public void rpcSoak() throws Exception
    {
        quietSoakLog();
        final ManagedChannel shared = createChannel();
        try
        {
            SoakClient.performSoakTest(address, SOAK_ITERATIONS, 0, SOAK_NO_LATENCY_BOUND_MS, 0, SOAK_TIMEOUT_SECONDS,
                271_828, 314_159, SOAK_THREADS, shared, ch -> ch);
        }
        finally
        {
            shared.shutdownNow(); // the soak shuts it down when it passes
            assertTrue("the soak's channel terminates", shared.awaitTermination(10, TimeUnit.SECONDS));
        }
    }

    /**
     * grpc-java's {@code channel_soak} case: 4 threads make a new channel for each of 200 calls in all, shutting the
     * previous one down: connections opened and closed concurrently, each carrying one call of the sizes above. Every
     * call must succeed, and after the last channel's shutdown every buffer and credit is back ({@link #tearDown}).
     */
    @Test
    public void channelSoak() throws Exception
    {
        quietSoakLog();
        final List<ManagedChannel> made = new CopyOnWriteArrayList<>();
        final ManagedChannel first = createChannel();
        try
        {
            SoakClient.performSoakTest(address, SOAK_ITERATIONS, 0, SOAK_NO_LATENCY_BOUND_MS, 0, SOAK_TIMEOUT_SECONDS,
                271_828, 314_159, SOAK_THREADS, first, previous ->
                {
                    if (previous != first)
                    {
                        previous.shutdownNow(); // as grpc-java's TestServiceClient does between iterations
                    }
                    final ManagedChannel next = createChannel();
                    made.add(next);
                    return next;
                });
        }
        finally
        {
            first.shutdownNow();
            for (final ManagedChannel channel : made)
            {
                channel.shutdownNow(); // each thread's last channel is still open when the soak returns
            }
            for (final ManagedChannel channel : made)
            {
                assertTrue("a soak channel terminates", channel.awaitTermination(10, TimeUnit.SECONDS));
            }
        }
    }

    /** SoakClient logs each iteration at INFO: only its failures are kept. */
    private static void quietSoakLog()
    {
        SOAK_LOG.setLevel(Level.WARNING);
    }

    @Override
    @After
    public void tearDown()
    {
        super.tearDown(); // the channel and the server shut down
        final ResourceUsage usage = Transports.providerFor(Transports.parse(address)).resourceUsage();
        final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (usage.buffersInUse() != 0 || usage.bytesInUse() != 0)
        {
            if (System.nanoTime() - deadline > 0)
            {
                fail("transport resources leaked: " + usage.describe());
            }
            try
            {
                Thread.sleep(5);
            }
            catch (final InterruptedException e)
            {
                Thread.currentThread().interrupt();
                throw new AssertionError(e);
            }
        }
    }
}
