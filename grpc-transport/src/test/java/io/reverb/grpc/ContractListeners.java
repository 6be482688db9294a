package io.reverb.grpc;

import io.grpc.Attributes;
import io.grpc.ChannelLogger;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import io.grpc.internal.ClientStreamListener;
import io.grpc.internal.DisconnectError;
import io.grpc.internal.ManagedClientTransport;
import io.grpc.internal.ServerListener;
import io.grpc.internal.ServerStream;
import io.grpc.internal.ServerStreamListener;
import io.grpc.internal.ServerTransport;
import io.grpc.internal.ServerTransportListener;
import io.grpc.internal.StreamListener;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The listeners of {@link AbstractTransportContractTest}: they record what a transport calls on grpc-java's
 * transport listeners, and every breach of the rules of grpc-java's transport API they can see by themselves: two
 * callbacks of one stream listener running at once (they must be serial), any callback after {@code closed}, and
 * {@code closed} more than once.
 */
final class ContractListeners
{
    static final long WAIT_SECONDS = 30;

    private ContractListeners()
    {
    }

    /** Strings as messages. */
    static final MethodDescriptor.Marshaller<String> STRINGS = new MethodDescriptor.Marshaller<>()
    {
        @Override
        public InputStream stream(final String value)
        {
            return new ByteArrayInputStream(value.getBytes(StandardCharsets.UTF_8));
        }

        @Override
        public String parse(final InputStream stream)
        {
            try (InputStream in = stream)
            {
                return new String(in.readAllBytes(), StandardCharsets.UTF_8);
            }
            catch (final IOException e)
            {
                throw new UncheckedIOException(e);
            }
        }
    };

    /** What one stream listener saw, and the breaches of the listener rules. */
    abstract static class Recording implements StreamListener
    {
        final String side;
        final List<String> events = Collections.synchronizedList(new ArrayList<>());
        final List<String> violations;
        final BlockingQueue<String> messages = new LinkedBlockingQueue<>();
        final AtomicInteger onReadyCount = new AtomicInteger();
        final AtomicInteger closedCount = new AtomicInteger();
        final CompletableFuture<Status> closed = new CompletableFuture<>();
        /** Runs inside onReady (on the listener's thread), if set. */
        volatile Runnable onReadyAction;
        private final AtomicInteger inside = new AtomicInteger();

        Recording(final String side, final List<String> violations)
        {
            this.side = side;
            this.violations = violations;
        }

        final void enter(final String event)
        {
            if (inside.incrementAndGet() != 1)
            {
                violations.add(side + ": " + event + " ran while another callback of the same stream ran");
            }
            if (closedCount.get() > 0)
            {
                violations.add(side + ": " + event + " after closed");
            }
            events.add(event);
            Thread.yield(); // a wider window for an overlapping callback to show
        }

        final void exit()
        {
            inside.decrementAndGet();
        }

        @Override
        public final void messagesAvailable(final MessageProducer producer)
        {
            enter("message");
            try
            {
                InputStream message;
                while ((message = producer.next()) != null)
                {
                    messages.add(STRINGS.parse(message));
                }
            }
            finally
            {
                exit();
            }
        }

        @Override
        public final void onReady()
        {
            enter("onReady");
            try
            {
                onReadyCount.incrementAndGet();
                final Runnable action = onReadyAction;
                if (action != null)
                {
                    action.run();
                }
            }
            finally
            {
                exit();
            }
        }

        final void closedWith(final Status status)
        {
            enter("closed");
            try
            {
                if (closedCount.incrementAndGet() > 1)
                {
                    violations.add(side + ": closed more than once (" + status + ")");
                }
                closed.complete(status);
            }
            finally
            {
                exit();
            }
        }

        /**
         * @return the status the listener was closed with (30 s safety net).
         * @throws Exception if it was not closed by then.
         */
        final Status awaitClose() throws Exception
        {
            return closed.get(WAIT_SECONDS, TimeUnit.SECONDS);
        }

        /**
         * @param count messages to wait for.
         * @return them (30 s safety net each).
         * @throws InterruptedException if interrupted.
         */
        final List<String> takeMessages(final int count) throws InterruptedException
        {
            final List<String> taken = new ArrayList<>();
            for (int i = 0; i < count; i++)
            {
                final String m = messages.poll(WAIT_SECONDS, TimeUnit.SECONDS);
                if (m == null)
                {
                    break;
                }
                taken.add(m);
            }
            return taken;
        }

        final List<String> eventsCopy()
        {
            synchronized (events)
            {
                return new ArrayList<>(events);
            }
        }
    }

    /** A server stream's listener. */
    static final class ServerRecording extends Recording implements ServerStreamListener
    {
        final CountDownLatch halfClosed = new CountDownLatch(1);

        ServerRecording(final List<String> violations)
        {
            super("server", violations);
        }

        @Override
        public void halfClosed()
        {
            enter("halfClosed");
            try
            {
                halfClosed.countDown();
            }
            finally
            {
                exit();
            }
        }

        @Override
        public void closed(final Status status)
        {
            closedWith(status);
        }

        @Override
        public void triggerEvent(final Object event)
        {
            // transport-specific events (none asserted here)
        }
    }

    /** A client stream's listener. */
    static final class ClientRecording extends Recording implements ClientStreamListener
    {
        final CompletableFuture<Metadata> headers = new CompletableFuture<>();
        volatile Metadata trailers;

        ClientRecording(final List<String> violations)
        {
            super("client", violations);
        }

        @Override
        public void headersRead(final Metadata received)
        {
            enter("headers");
            try
            {
                headers.complete(received);
            }
            finally
            {
                exit();
            }
        }

        @Override
        public void closed(final Status status, final RpcProgress rpcProgress, final Metadata received)
        {
            trailers = received;
            closedWith(status);
        }
    }

    /** One server stream as the server transport created it. */
    static final class StreamCreation
    {
        final ServerStream stream;
        final String method;
        final Metadata headers;
        final ServerRecording listener;
        /** The server transport whose listener was given the stream. */
        final ServerTransport transport;

        StreamCreation(final ServerStream stream, final String method, final Metadata headers,
            final ServerRecording listener, final ServerTransport transport)
        {
            this.stream = stream;
            this.method = method;
            this.headers = headers;
            this.listener = listener;
            this.transport = transport;
        }
    }

    /**
     * One server transport's listener, checking grpc-java's rules for it: transportReady once, before any stream;
     * no stream after transportTerminated; transportTerminated once.
     */
    static final class TransportRecording implements ServerTransportListener
    {
        final ServerTransport transport;
        final CountDownLatch ready = new CountDownLatch(1);
        final CountDownLatch terminated = new CountDownLatch(1);
        final AtomicInteger readyCount = new AtomicInteger();
        final AtomicInteger terminatedCount = new AtomicInteger();
        private final TestServerListener server;

        TransportRecording(final ServerTransport transport, final TestServerListener server)
        {
            this.transport = transport;
            this.server = server;
        }

        @Override
        public void streamCreated(final ServerStream stream, final String method, final Metadata headers)
        {
            if (readyCount.get() != 1)
            {
                server.violations.add("streamCreated on " + transport + " before transportReady");
            }
            if (terminatedCount.get() != 0)
            {
                server.violations.add("streamCreated on " + transport + " after transportTerminated");
            }
            final ServerRecording listener = new ServerRecording(server.violations);
            stream.setListener(listener); // before returning, as grpc-java's ServerImpl does
            server.streams.add(new StreamCreation(stream, method, headers, listener, transport));
        }

        @Override
        public Attributes transportReady(final Attributes attributes)
        {
            if (readyCount.incrementAndGet() != 1)
            {
                server.violations.add("transportReady more than once on " + transport);
            }
            ready.countDown();
            return attributes;
        }

        @Override
        public void transportTerminated()
        {
            if (terminatedCount.incrementAndGet() != 1)
            {
                server.violations.add("transportTerminated more than once on " + transport);
            }
            terminated.countDown();
        }
    }

    /** The server's listener: hands every stream of every transport a {@link ServerRecording}, as ServerImpl does. */
    static final class TestServerListener implements ServerListener
    {
        final BlockingQueue<StreamCreation> streams = new LinkedBlockingQueue<>();
        final List<ServerTransport> transports = new CopyOnWriteArrayList<>();
        /** Every transport's listener, in order of creation. */
        final List<TransportRecording> recordings = new CopyOnWriteArrayList<>();
        final CountDownLatch shutdown = new CountDownLatch(1);
        private final List<String> violations;

        TestServerListener(final List<String> violations)
        {
            this.violations = violations;
        }

        @Override
        public ServerTransportListener transportCreated(final ServerTransport transport)
        {
            transports.add(transport);
            final TransportRecording recording = new TransportRecording(transport, this);
            recordings.add(recording);
            return recording;
        }

        /**
         * @param transport a transport this listener was told of.
         * @return its recording.
         */
        TransportRecording recordingOf(final ServerTransport transport)
        {
            for (final TransportRecording recording : recordings)
            {
                if (recording.transport == transport)
                {
                    return recording;
                }
            }
            throw new AssertionError("no transportCreated for " + transport);
        }

        @Override
        public void serverShutdown()
        {
            shutdown.countDown();
        }

        /**
         * @return the next stream the server created (30 s safety net).
         * @throws Exception if none came.
         */
        StreamCreation takeStream() throws Exception
        {
            final StreamCreation created = streams.poll(WAIT_SECONDS, TimeUnit.SECONDS);
            if (created == null)
            {
                throw new AssertionError("no server stream within " + WAIT_SECONDS + " s");
            }
            return created;
        }
    }

    /** A client transport's listener. */
    static final class TestClientTransportListener implements ManagedClientTransport.Listener
    {
        final CountDownLatch ready = new CountDownLatch(1);
        final CountDownLatch terminated = new CountDownLatch(1);

        @Override
        public void transportShutdown(final Status s, final DisconnectError disconnectError)
        {
        }

        @Override
        public void transportTerminated()
        {
            terminated.countDown();
        }

        @Override
        public void transportReady()
        {
            ready.countDown();
        }

        @Override
        public void transportInUse(final boolean inUse)
        {
        }
    }

    /** A channel logger that logs nothing. */
    static final class QuietLogger extends ChannelLogger
    {
        @Override
        public void log(final ChannelLogLevel level, final String message)
        {
        }

        @Override
        public void log(final ChannelLogLevel level, final String messageFormat, final Object... args)
        {
        }
    }
}
