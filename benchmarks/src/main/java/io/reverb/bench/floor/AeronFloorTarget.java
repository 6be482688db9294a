package io.reverb.bench.floor;

import io.aeron.Aeron;
import io.aeron.ExclusivePublication;
import io.aeron.Publication;
import io.aeron.Subscription;
import io.aeron.driver.MediaDriver;
import io.aeron.driver.ThreadingMode;
import io.aeron.logbuffer.FragmentHandler;
import io.aeron.logbuffer.Header;
import io.reverb.bench.target.BenchServer;
import io.reverb.bench.target.CallObserver;
import io.reverb.bench.target.EchoClient;
import io.reverb.bench.target.Target;
import io.reverb.bench.target.TargetSettings;
import org.agrona.DirectBuffer;
import org.agrona.collections.Int2ObjectHashMap;
import org.agrona.concurrent.BackoffIdleStrategy;
import org.agrona.concurrent.BusySpinIdleStrategy;
import org.agrona.concurrent.IdleStrategy;
import org.agrona.concurrent.SleepingMillisIdleStrategy;
import org.agrona.concurrent.UnsafeBuffer;

import java.io.IOException;
import java.net.URI;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

/**
 * The reference floor of {@code shm://}: an Aeron IPC ping-pong between two processes, Aeron being a benchmark-only
 * dependency. Address {@code floor+aeron://name} ({@code floor+aeron} alone on the command line).
 *
 * <p>The server process runs an embedded media driver (directory {@code /dev/shm/reverb-NAME-aeron}, shared threading,
 * 4 MiB IPC terms; its conductor sleeps 1 ms between duty cycles: an IPC message goes from the publisher's log
 * buffer to the subscriber without it) and one echo thread that copies each request of stream 1001 into the reply
 * stream 1002 of the sender's session. A client subscribes to the replies of its own publication's session and
 * completes calls on one polling thread, as {@code shm://} completes them on its poller.
 *
 * <p>Polling: {@code BUSY} is {@link BusySpinIdleStrategy} on both echo and client threads; {@code ADAPTIVE} (the
 * default, as for {@code shm://}) and {@code EVENT} are Aeron's usual {@link BackoffIdleStrategy} (spin, yield, then
 * park from 1 µs up to 1 ms): Aeron has no mode that blocks until a message arrives. A call is 4 + payload bytes
 * (the lane's number, then the request's bytes). Unary only.
 */
public final class AeronFloorTarget implements Target
{
    /** The URI scheme. */
    public static final String SCHEME = "floor+aeron";
    private static final int REQUEST_STREAM = 1001;
    private static final int REPLY_STREAM = 1002;
    private static final int IPC_TERM_LENGTH = 4 << 20;
    private static final int FRAGMENTS = 16;
    private static final long CONNECT_NANOS = TimeUnit.SECONDS.toNanos(30);

    private final long driverTimeoutMs;

    /** A floor target whose clients give up on a silent media driver after Aeron's default 10 s. */
    public AeronFloorTarget()
    {
        this(10_000);
    }

    /**
     * @param driverTimeoutMs how long a client waits for a silent media driver (its server gone) before failing.
     */
    AeronFloorTarget(final long driverTimeoutMs)
    {
        this.driverTimeoutMs = driverTimeoutMs;
    }

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

    static IdleStrategy idleStrategy(final TargetSettings settings)
    {
        return settings.polling() != null && "BUSY".equals(settings.polling().toUpperCase(Locale.ROOT)) ?
            new BusySpinIdleStrategy() :
            new BackoffIdleStrategy(10, 20, TimeUnit.MICROSECONDS.toNanos(1), TimeUnit.MILLISECONDS.toNanos(1));
    }

    static String directory(final String name)
    {
        final Path base = Files.isDirectory(Path.of("/dev/shm")) ? Path.of("/dev/shm") :
            Path.of(System.getProperty("java.io.tmpdir"));
        return base.resolve("reverb-" + name + "-aeron").toString();
    }

    /** A publication's channel: IPC with this target's term length, and a session id when given (not 0). */
    private static String publication(final int sessionId)
    {
        return "aeron:ipc?term-length=" + IPC_TERM_LENGTH + (sessionId != 0 ? "|session-id=" + sessionId : "");
    }

    @Override
    public BenchServer startServer(final URI uri, final TargetSettings settings)
    {
        final String name = FloorTargets.name(uri);
        final MediaDriver driver = MediaDriver.launch(new MediaDriver.Context()
            .aeronDirectoryName(directory(name))
            .dirDeleteOnStart(true)
            .dirDeleteOnShutdown(true)
            .threadingMode(ThreadingMode.SHARED)
            .sharedIdleStrategy(new SleepingMillisIdleStrategy(1))
            .ipcTermBufferLength(IPC_TERM_LENGTH));
        Aeron aeron = null;
        try
        {
            aeron = Aeron.connect(new Aeron.Context().aeronDirectoryName(driver.aeronDirectoryName()));
            final EchoLoop loop = new EchoLoop(aeron, idleStrategy(settings));
            final Thread thread = new Thread(loop, "floor-aeron-echo");
            thread.setDaemon(true);
            thread.start();
            final Aeron client = aeron;
            return new BenchServer()
            {
                @Override
                public String uri()
                {
                    return SCHEME + "://" + name;
                }

                @Override
                public void close()
                {
                    loop.running = false;
                    try
                    {
                        thread.join(TimeUnit.SECONDS.toMillis(10));
                    }
                    catch (final InterruptedException ex)
                    {
                        Thread.currentThread().interrupt();
                    }
                    client.close();
                    driver.close();
                }
            };
        }
        catch (final RuntimeException ex)
        {
            if (aeron != null)
            {
                aeron.close();
            }
            driver.close();
            throw ex;
        }
    }

    @Override
    public EchoClient connect(final URI uri, final TargetSettings settings) throws IOException
    {
        // The media driver lives in the server's process: when it goes, the client's conductor reports the driver's
        // timeout here, and every call in flight or to come fails instead of waiting for ever.
        final AtomicReference<Client> client = new AtomicReference<>();
        final Aeron aeron = Aeron.connect(new Aeron.Context()
            .aeronDirectoryName(directory(FloorTargets.name(uri)))
            .driverTimeoutMs(driverTimeoutMs)
            .errorHandler(error ->
            {
                final Client c = client.get();
                if (c != null)
                {
                    c.fail(error);
                }
            }));
        try
        {
            client.set(new Client(aeron, idleStrategy(settings)));
            return client.get();
        }
        catch (final IOException | RuntimeException ex)
        {
            aeron.close();
            throw ex;
        }
    }

    /** The server's echo thread: requests of every session, each answered on the reply stream of its session. */
    private static final class EchoLoop implements Runnable, FragmentHandler
    {
        private final Aeron aeron;
        private final IdleStrategy idle;
        private final Subscription requests;
        private final Int2ObjectHashMap<ExclusivePublication> replies = new Int2ObjectHashMap<>();
        private final Queue<Integer> gone = new ConcurrentLinkedQueue<>();
        volatile boolean running = true;

        EchoLoop(final Aeron aeron, final IdleStrategy idle)
        {
            this.aeron = aeron;
            this.idle = idle;
            this.requests = aeron.addSubscription("aeron:ipc", REQUEST_STREAM, null,
                image -> gone.add(image.sessionId()));
        }

        @Override
        public void run()
        {
            while (running)
            {
                idle.idle(requests.poll(this, FRAGMENTS));
                Integer session;
                while ((session = gone.poll()) != null)
                {
                    final ExclusivePublication publication = replies.remove(session.intValue());
                    if (publication != null)
                    {
                        publication.close();
                    }
                }
            }
            replies.values().forEach(Publication::close);
            requests.close();
        }

        @Override
        public void onFragment(final DirectBuffer buffer, final int offset, final int length, final Header header)
        {
            if (length < EngineFloorTarget.HEADER)
            {
                return;
            }
            ExclusivePublication reply = replies.get(header.sessionId());
            if (reply == null)
            {
                // A new client: its reply stream, once (the client waits for it to connect before its first call).
                reply = aeron.addExclusivePublication(publication(header.sessionId()), REPLY_STREAM);
                replies.put(header.sessionId(), reply);
            }
            long result;
            while ((result = reply.offer(buffer, offset, length)) < 0)
            {
                if (result == Publication.NOT_CONNECTED || result == Publication.CLOSED ||
                    result == Publication.MAX_POSITION_EXCEEDED || !running)
                {
                    // The client is not (yet, or any more) subscribed: a hello is repeated until it is, a call of a
                    // client that went away has nobody to answer. Back pressure (the client's window) is waited out.
                    return;
                }
                Thread.onSpinWait();
            }
        }
    }

    /** The client: one polling thread completes the calls of every lane. */
    private static final class Client extends FloorClient implements FragmentHandler, Runnable
    {
        private final Aeron aeron;
        private final IdleStrategy idle;
        private final Publication requests;
        private final Subscription replies;
        private final Thread poller;
        private volatile boolean running = true;
        private volatile Throwable failure;

        Client(final Aeron aeron, final IdleStrategy idle) throws IOException
        {
            super("floor+aeron");
            this.aeron = aeron;
            this.idle = idle;
            this.requests = aeron.addPublication(publication(0), REQUEST_STREAM);
            this.replies = aeron.addSubscription("aeron:ipc?session-id=" + requests.sessionId(), REPLY_STREAM);
            final long deadline = System.nanoTime() + CONNECT_NANOS;
            while (!requests.isConnected())
            {
                pause(deadline, "the floor server's request subscription");
            }
            poller = new Thread(this, "floor-aeron-client");
            poller.setDaemon(true);
            poller.start();
            // The server opens this client's reply stream on its first message: one hello, not counted as a call.
            final AeronLane hello = (AeronLane)newCaller(null);
            while (!replies.isConnected())
            {
                hello.send();
                pause(deadline, "the floor server's reply publication");
            }
            forget(hello);
        }

        private static void pause(final long deadline, final String what) throws IOException
        {
            if (System.nanoTime() > deadline)
            {
                throw new IOException("floor+aeron: no connection to " + what + " within 30 s");
            }
            try
            {
                Thread.sleep(1);
            }
            catch (final InterruptedException ex)
            {
                Thread.currentThread().interrupt();
                throw new IOException("interrupted while connecting", ex);
            }
        }

        @Override
        public void run()
        {
            while (running)
            {
                idle.idle(replies.poll(this, FRAGMENTS));
            }
        }

        @Override
        public void onFragment(final DirectBuffer buffer, final int offset, final int length, final Header header)
        {
            onReply(buffer, offset, length);
        }

        @Override
        Lane newLane(final int number, final CallObserver observer)
        {
            return new AeronLane(number, observer);
        }

        /** The media driver is gone (or the client failed): calls in flight and to come end UNAVAILABLE. */
        void fail(final Throwable cause)
        {
            failure = cause;
            running = false;
            failLanes(new IOException("floor+aeron: " + cause, cause));
        }

        @Override
        public void close()
        {
            running = false;
            try
            {
                poller.join(TimeUnit.SECONDS.toMillis(10));
            }
            catch (final InterruptedException ex)
            {
                Thread.currentThread().interrupt();
            }
            failLanes(new IOException("floor+aeron client closed"));
            aeron.close();
        }

        /** A lane with its message in direct memory: the lane's number, then the payload. */
        private final class AeronLane extends Lane
        {
            UnsafeBuffer message = new UnsafeBuffer(ByteBuffer.allocateDirect(EngineFloorTarget.HEADER));

            AeronLane(final int number, final CallObserver observer)
            {
                super(number, observer);
                message.putInt(0, number);
            }

            @Override
            void prepare()
            {
                message = new UnsafeBuffer(ByteBuffer.allocateDirect(EngineFloorTarget.HEADER + sent.length));
                message.putInt(0, number);
                message.putBytes(EngineFloorTarget.HEADER, sent);
            }

            @Override
            void send()
            {
                final Throwable failed = failure;
                if (failed != null)
                {
                    complete(FloorTargets.UNAVAILABLE, new IOException("floor+aeron: " + failed, failed));
                    return;
                }
                long result;
                // A lane has one message in flight: back pressure is the term window, brief; spin it out.
                while ((result = requests.offer(message, 0, EngineFloorTarget.HEADER + sent.length)) < 0)
                {
                    if (result == Publication.NOT_CONNECTED && observer == null)
                    {
                        return; // the hello, retried by the connect loop
                    }
                    if (result == Publication.NOT_CONNECTED || result == Publication.CLOSED ||
                        result == Publication.MAX_POSITION_EXCEEDED || !running)
                    {
                        complete(FloorTargets.UNAVAILABLE, new IOException("floor+aeron send failed: " + result));
                        return;
                    }
                    Thread.onSpinWait(); // back pressure or an admin action: the server's echo thread moves on
                }
            }
        }
    }
}
