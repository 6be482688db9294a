package io.reverb.bench.floor;

import com.google.protobuf.BytesValue;
import io.reverb.bench.target.BenchServer;
import io.reverb.bench.target.CallObserver;
import io.reverb.bench.target.EchoClient;
import io.reverb.bench.target.Target;
import io.reverb.bench.target.TargetSettings;
import io.reverb.common.WriteClaim;
import io.reverb.rdma.engine.Connection;
import io.reverb.rdma.engine.EngineConfig;
import io.reverb.rdma.engine.EngineListener;
import io.reverb.rdma.engine.MessageHandler;
import io.reverb.rdma.engine.PollingMode;
import io.reverb.rdma.engine.RdmaEngine;
import io.reverb.rdma.engine.RetainedMessage;
import org.agrona.DirectBuffer;
import org.agrona.concurrent.UnsafeBuffer;

import java.io.IOException;
import java.net.URI;
import java.util.ArrayDeque;
import java.util.Locale;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReferenceArray;

/**
 * The floor of {@code shm://}, ours: a ping-pong over the RDMA engine's own shared-memory rings between two processes,
 * with no RPC at all (no rpc-core, no call ids, headers, marshalling or status). Address {@code floor://name}
 * ({@code floor} alone on the command line). The engine is the one {@code shm://} runs on, opened with the same
 * settings as the transport's default engine (the {@link EngineConfig} defaults) and the run's polling mode, so the
 * difference between an {@code shm://} run and a {@code floor://} run of the same payload and polling mode is what the
 * RPC layers add.
 *
 * <p>A call sends one engine message of 4 + payload bytes (a lane number, then the request's bytes), the server's
 * poller copies it into a reply, and the client's poller completes the call, as {@code shm://}'s unary calls
 * complete on the client's poller. Unary only: a server-streaming run is refused.
 */
public final class EngineFloorTarget implements Target
{
    /** The URI scheme. */
    public static final String SCHEME = "floor";
    /** Bytes before the payload in each message: the lane's number. */
    static final int HEADER = 4;

    @Override
    public String framework()
    {
        return FloorTargets.FRAMEWORK;
    }

    @Override
    public boolean handles(final URI uri)
    {
        return SCHEME.equals(uri.getScheme());
    }

    /**
     * @param settings the run's settings.
     * @param side     {@code "client"} or {@code "server"}, for thread names.
     * @return the engine settings: the defaults (those of {@code shm://}'s default engine) and the polling mode.
     */
    static EngineConfig config(final TargetSettings settings, final String side)
    {
        final EngineConfig config = new EngineConfig().name("floor-" + side);
        if (settings.polling() != null)
        {
            config.pollingMode(PollingMode.valueOf(settings.polling().toUpperCase(Locale.ROOT)));
        }
        return config;
    }

    @Override
    public BenchServer startServer(final URI uri, final TargetSettings settings) throws IOException
    {
        final String name = FloorTargets.name(uri);
        final RdmaEngine engine = RdmaEngine.open("shm", config(settings, "server"));
        final CopyOnWriteArrayList<Connection> connections = new CopyOnWriteArrayList<>();
        try
        {
            final EngineListener listener = engine.listen(name, connection ->
            {
                connections.add(connection);
                connection.onClose(cause -> connections.remove(connection));
                connection.setHandler(new Echo(connection));
            });
            return new BenchServer()
            {
                @Override
                public String uri()
                {
                    return SCHEME + "://" + listener.address();
                }

                @Override
                public void close()
                {
                    listener.close();
                    for (final Connection c : connections)
                    {
                        c.close();
                    }
                    engine.close();
                }
            };
        }
        catch (final IOException | RuntimeException ex)
        {
            engine.close();
            throw ex;
        }
    }

    @Override
    public EchoClient connect(final URI uri, final TargetSettings settings) throws IOException
    {
        final RdmaEngine engine = RdmaEngine.open("shm", config(settings, "client"));
        try
        {
            return new Client(engine, engine.connect(FloorTargets.name(uri)));
        }
        catch (final IOException | RuntimeException ex)
        {
            engine.close();
            throw ex;
        }
    }

    /**
     * The server side: every message copied into a reply on the poller thread. A reply that finds no room (a large
     * message waiting for its grant, a full ring) keeps its request ({@link Connection#retain()}) and later ones in
     * order until the connection is writable again: a poller never spins waiting for itself.
     */
    private static final class Echo implements MessageHandler
    {
        private final Connection connection;
        private final WriteClaim claim = new WriteClaim();
        private final UnsafeBuffer out = new UnsafeBuffer(0, 0);
        private final ArrayDeque<RetainedMessage> waiting = new ArrayDeque<>();
        private final Runnable drain = this::drain;

        Echo(final Connection connection)
        {
            this.connection = connection;
        }

        @Override
        public void onMessage(final DirectBuffer buffer, final int offset, final int length)
        {
            if (length < HEADER)
            {
                return; // not one of ours: nothing to route a reply to
            }
            if (waiting.isEmpty())
            {
                final int rc = connection.tryClaim(length, claim);
                if (rc == Connection.OK)
                {
                    reply(buffer, offset, length);
                    return;
                }
                if (rc != Connection.BACK_PRESSURED)
                {
                    return; // closing: the client's calls fail with the connection
                }
            }
            waiting.add(connection.retain());
            if (waiting.size() == 1)
            {
                connection.onWritable(drain);
            }
        }

        private void drain()
        {
            RetainedMessage message;
            while ((message = waiting.peek()) != null)
            {
                final int rc = connection.tryClaim(message.length(), claim);
                if (rc == Connection.BACK_PRESSURED)
                {
                    connection.onWritable(drain);
                    return;
                }
                waiting.poll();
                if (rc == Connection.OK)
                {
                    reply(message.buffer(), message.offset(), message.length());
                }
                message.release();
            }
        }

        private void reply(final DirectBuffer buffer, final int offset, final int length)
        {
            out.wrap(claim.buffer());
            out.putBytes(claim.offset(), buffer, offset, length);
            claim.commit();
        }
    }

    /** The client side: lanes numbered from 0, each with its own claim; replies routed by lane number. */
    private static final class Client implements EchoClient, MessageHandler
    {
        private final RdmaEngine engine;
        private final Connection connection;
        private final AtomicInteger lanes = new AtomicInteger();
        // numbers of blocking calls' lanes, taken again by later ones (a lane per blockingEcho would run out)
        private final Queue<Integer> freeNumbers = new ConcurrentLinkedQueue<>();
        private final AtomicReferenceArray<Lane> byNumber = new AtomicReferenceArray<>(FloorTargets.MAX_LANES);
        private volatile Throwable failure;

        Client(final RdmaEngine engine, final Connection connection)
        {
            this.engine = engine;
            this.connection = connection;
            connection.onClose(this::closed);
            connection.setHandler(this);
        }

        @Override
        public BytesValue blockingEcho(final BytesValue request)
        {
            final CountDownLatch done = new CountDownLatch(1);
            final Throwable[] error = new Throwable[1];
            final Lane lane = (Lane)newCaller(new Blocking(done, error));
            lane.echo(request);
            try
            {
                if (!done.await(30, TimeUnit.SECONDS))
                {
                    throw new IllegalStateException("no echo from the floor server within 30 s");
                }
            }
            catch (final InterruptedException ex)
            {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted waiting for the floor's echo", ex);
            }
            finally
            {
                byNumber.set(lane.number, null);
                if (done.getCount() == 0)
                {
                    freeNumbers.add(lane.number); // ended: no late reply can reach the next user of the number
                }
            }
            if (error[0] != null)
            {
                throw new IllegalStateException("floor echo failed: " + error[0], error[0]);
            }
            return request;
        }

        @Override
        public long blockingStream(final BytesValue request)
        {
            throw FloorTargets.unaryOnly();
        }

        @Override
        public Caller newCaller(final CallObserver observer)
        {
            final Integer free = observer instanceof Blocking ? freeNumbers.poll() : null;
            final int number = free != null ? free : lanes.getAndIncrement();
            if (number >= FloorTargets.MAX_LANES)
            {
                throw new IllegalArgumentException("the floor serves at most " + FloorTargets.MAX_LANES + " lanes (-c)");
            }
            final Lane lane = new Lane(number, observer);
            byNumber.set(number, lane);
            return lane;
        }

        @Override
        public void onMessage(final DirectBuffer buffer, final int offset, final int length)
        {
            if (length < HEADER)
            {
                return;
            }
            final int number = buffer.getInt(offset);
            final Lane lane = number >= 0 && number < FloorTargets.MAX_LANES ? byNumber.get(number) : null;
            if (lane == null || length != HEADER + lane.sent.length)
            {
                return; // not an echo of a call of ours: its call fails when the connection does
            }
            lane.complete(0, null);
        }

        private void closed(final Throwable cause)
        {
            failure = cause != null ? cause : new IOException("floor connection closed");
            for (int i = 0; i < FloorTargets.MAX_LANES; i++)
            {
                final Lane lane = byNumber.get(i);
                if (lane != null)
                {
                    lane.complete(FloorTargets.UNAVAILABLE, failure);
                }
            }
        }

        @Override
        public void close()
        {
            connection.close();
            engine.close();
        }

        /** The observer of one blocking call. */
        private static final class Blocking implements CallObserver
        {
            private final CountDownLatch done;
            private final Throwable[] error;

            Blocking(final CountDownLatch done, final Throwable[] error)
            {
                this.done = done;
                this.error = error;
            }

            @Override
            public void onMessage()
            {
            }

            @Override
            public void onClose(final int statusCode, final Throwable cause)
            {
                error[0] = statusCode == 0 ? null : cause;
                done.countDown();
            }
        }

        /** One lane of sequential calls: one message in flight at most. */
        private final class Lane implements Caller
        {
            final int number;
            final CallObserver observer;
            final WriteClaim claim = new WriteClaim();
            final UnsafeBuffer out = new UnsafeBuffer(0, 0);
            final Runnable retry = this::send;
            BytesValue request;
            byte[] sent = new byte[0];
            // true from the send until the reply or the failure: set by the sender, cleared by the poller
            final AtomicBoolean outstanding = new AtomicBoolean();

            Lane(final int number, final CallObserver observer)
            {
                this.number = number;
                this.observer = observer;
            }

            @Override
            public void echo(final BytesValue message)
            {
                if (message != request)
                {
                    // The load generator sends the same request object on a lane: its bytes are taken once.
                    request = message;
                    sent = message.getValue().toByteArray();
                }
                outstanding.set(true);
                send();
            }

            @Override
            public void stream(final BytesValue message)
            {
                throw FloorTargets.unaryOnly();
            }

            private void send()
            {
                final Throwable failed = failure;
                if (failed != null)
                {
                    complete(FloorTargets.UNAVAILABLE, failed);
                    return;
                }
                final int rc = connection.tryClaim(HEADER + sent.length, claim);
                if (rc == Connection.BACK_PRESSURED)
                {
                    connection.onWritable(retry);
                    return;
                }
                if (rc != Connection.OK)
                {
                    complete(FloorTargets.UNAVAILABLE, new IOException("floor send failed: " + Connection.resultName(rc)));
                    return;
                }
                out.wrap(claim.buffer());
                out.putInt(claim.offset(), number);
                out.putBytes(claim.offset() + HEADER, sent);
                claim.commit();
            }

            void complete(final int status, final Throwable error)
            {
                if (outstanding.compareAndSet(true, false))
                {
                    if (status == 0)
                    {
                        observer.onMessage();
                    }
                    observer.onClose(status, error);
                }
            }
        }
    }
}
