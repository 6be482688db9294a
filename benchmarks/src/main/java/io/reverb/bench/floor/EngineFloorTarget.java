package io.reverb.bench.floor;

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
import java.util.concurrent.CopyOnWriteArrayList;

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
                    return FloorTargets.withQuery(SCHEME + "://" + listener.address(), uri);
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
        final boolean readReplies = FloorTargets.readsReplies(uri);
        final RdmaEngine engine = RdmaEngine.open("shm", config(settings, "client"));
        try
        {
            final Client client = new Client(engine, engine.connect(FloorTargets.name(uri)));
            client.readReplies = readReplies;
            return client;
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
    private static final class Client extends FloorClient implements MessageHandler
    {
        private final RdmaEngine engine;
        private final Connection connection;
        private volatile Throwable failure;

        Client(final RdmaEngine engine, final Connection connection)
        {
            super("floor");
            this.engine = engine;
            this.connection = connection;
            connection.onClose(this::closed);
            connection.setHandler(this);
        }

        @Override
        Lane newLane(final int number, final CallObserver observer)
        {
            return new EngineLane(number, observer);
        }

        @Override
        public void onMessage(final DirectBuffer buffer, final int offset, final int length)
        {
            onReply(buffer, offset, length);
        }

        private void closed(final Throwable cause)
        {
            failure = cause != null ? cause : new IOException("floor connection closed");
            failLanes(failure);
        }

        @Override
        public void close()
        {
            connection.close();
            engine.close();
        }

        /** A lane with its own claim on the connection. */
        private final class EngineLane extends Lane
        {
            final WriteClaim claim = new WriteClaim();
            final UnsafeBuffer out = new UnsafeBuffer(0, 0);
            final Runnable retry = this::send;

            EngineLane(final int number, final CallObserver observer)
            {
                super(number, observer);
            }

            @Override
            void send()
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
        }
    }
}
