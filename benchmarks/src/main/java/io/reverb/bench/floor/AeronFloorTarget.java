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
import java.util.Arrays;
import java.util.Locale;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

/**
 * The reference floor of {@code shm://}: an Aeron IPC ping-pong between two processes, Aeron being a benchmark-only
 * dependency. Address {@code floor+aeron://name} ({@code floor+aeron} alone on the command line).
 *
 * <p>The server process runs an embedded media driver (directory {@code /dev/shm/reverb-NAME-aeron}, shared threading;
 * its conductor sleeps 1 ms between duty cycles: an IPC message goes from the publisher's log buffer to the
 * subscriber without it) and one echo thread that copies each request of stream 1001 into the reply stream 1002 of
 * the sender's session, with the term length of the request's. A client subscribes to the replies of its own
 * publication's session and completes calls on one polling thread, as {@code shm://} completes them on its poller.
 *
 * <p>Sizes: Aeron's longest message is a term's length / 8. A client's first publication has 4 MiB terms (messages
 * up to 512 KiB); a lane whose message is longer gets a publication (and reply stream) of its own with terms of
 * 8 times its length rounded up to a power of two, up to 16 MiB, so up to
 * {@link #MAX_PAYLOAD} (2 MiB - 4) payload bytes; a longer payload is refused ({@link IllegalArgumentException}, no call made).
 * A message longer than a frame (1,376 bytes on IPC) arrives in fragments, put together again ({@code Reassembly})
 * by the echo thread and the client's poller.
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
    /** The longest term a client asks for: 16 MiB (three of them make a 48 MiB log buffer in /dev/shm each way). */
    static final int MAX_TERM_LENGTH = 16 << 20;
    /** The longest payload the target carries: Aeron's longest message at the longest term, less the lane number. */
    public static final int MAX_PAYLOAD = MAX_TERM_LENGTH / 8 - EngineFloorTarget.HEADER;
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

    /** A publication's channel: IPC with a term length, and a session id when given (not 0). */
    private static String publication(final int termLength, final int sessionId)
    {
        return "aeron:ipc?term-length=" + termLength + (sessionId != 0 ? "|session-id=" + sessionId : "");
    }

    /**
     * @param messageLength a message's length, lane number included.
     * @return the term length whose longest message holds it (4 MiB at least, as for small messages).
     * @throws IllegalArgumentException if no term up to {@link #MAX_TERM_LENGTH} holds it.
     */
    static int termLength(final int messageLength)
    {
        final long needed = 8L * messageLength;
        if (messageLength < 0 || needed > MAX_TERM_LENGTH)
        {
            throw new IllegalArgumentException("floor+aeron carries at most " + MAX_PAYLOAD + " payload bytes (a term of " +
                MAX_TERM_LENGTH + " bytes / 8, less the 4-byte lane number), not " +
                (messageLength - EngineFloorTarget.HEADER));
        }
        return Math.max(IPC_TERM_LENGTH, Integer.highestOneBit((int)Math.max(1, needed - 1)) << 1);
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
                    return FloorTargets.withQuery(SCHEME + "://" + name, uri);
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
        final boolean readReplies = FloorTargets.readsReplies(uri);
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
            client.get().readReplies = readReplies;
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
        // each session's fragments put together, then echoed by onMessage
        private final Int2ObjectHashMap<Reassembly> assemblies = new Int2ObjectHashMap<>();
        private final FragmentHandler onMessage = this::onMessage;
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
                    assemblies.remove(session.intValue());
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
            Reassembly assembly = assemblies.get(header.sessionId());
            if (assembly == null)
            {
                // the client chose the term length; a message is never longer than an eighth of it, and a term
                // longer than ours is not answered (below): its messages are not kept either
                assembly = new Reassembly(onMessage, Math.min(1 << header.positionBitsToShift(), MAX_TERM_LENGTH) / 8);
                assemblies.put(header.sessionId(), assembly);
            }
            assembly.onFragment(buffer, offset, length, header);
        }

        private void onMessage(final DirectBuffer buffer, final int offset, final int length, final Header header)
        {
            if (length < EngineFloorTarget.HEADER)
            {
                return;
            }
            ExclusivePublication reply = replies.get(header.sessionId());
            if (reply == null)
            {
                // A new client publication: its reply stream, once (the client waits for it to connect before its
                // first call), with the request's term length so that the longest request fits in a reply. A term
                // length is checked by the driver (a power of two, 64 KiB to 1 GiB); above ours it is refused here.
                final int termLength = 1 << header.positionBitsToShift();
                if (termLength > MAX_TERM_LENGTH)
                {
                    return;
                }
                reply = aeron.addExclusivePublication(publication(termLength, header.sessionId()), REPLY_STREAM);
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

    /** The client: one polling thread completes the calls of every lane, on every channel. */
    private static final class Client extends FloorClient implements FragmentHandler, Runnable
    {
        private final Aeron aeron;
        private final IdleStrategy idle;
        // the channels by rising term length, the first (4 MiB) opened by connect; replaced whole when one is added
        private volatile Channel[] channels = new Channel[0];
        private final Thread poller;
        private volatile boolean running = true;
        private volatile Throwable failure;

        Client(final Aeron aeron, final IdleStrategy idle) throws IOException
        {
            super("floor+aeron");
            this.aeron = aeron;
            this.idle = idle;
            poller = new Thread(this, "floor-aeron-client");
            poller.setDaemon(true);
            open(IPC_TERM_LENGTH);
        }

        /**
         * Opens a request publication with a term length and its reply subscription, and waits until the server
         * answers on it. Called by connect and by a lane's first call of a longer message.
         */
        private Channel open(final int termLength) throws IOException
        {
            // The driver shares one IPC publication per stream among a process's clients, and refuses another term
            // length for it: a longer channel's publication is exclusive, its lanes' offers taken in turn.
            final boolean exclusive = termLength != IPC_TERM_LENGTH;
            final Publication requests = exclusive ?
                aeron.addExclusivePublication(publication(termLength, 0), REQUEST_STREAM) :
                aeron.addPublication(publication(termLength, 0), REQUEST_STREAM);
            final Subscription replies =
                aeron.addSubscription("aeron:ipc?session-id=" + requests.sessionId(), REPLY_STREAM);
            final Channel channel = new Channel(requests, replies, new Reassembly(this, termLength / 8), exclusive);
            final long deadline = System.nanoTime() + CONNECT_NANOS;
            while (!requests.isConnected())
            {
                pause(deadline, "the floor server's request subscription");
            }
            final Channel[] more = Arrays.copyOf(channels, channels.length + 1);
            more[channels.length] = channel;
            channels = more;
            if (!poller.isAlive())
            {
                poller.start();
            }
            // The server opens this channel's reply stream on its first message: one hello, not counted as a call.
            final AeronLane hello = (AeronLane)newCaller(null);
            hello.channel = channel;
            while (!replies.isConnected())
            {
                hello.send();
                pause(deadline, "the floor server's reply publication");
            }
            forget(hello);
            return channel;
        }

        /** @return the first channel whose messages hold this length, opened if there is none yet. */
        synchronized Channel channelFor(final int messageLength)
        {
            for (final Channel channel : channels)
            {
                if (channel.requests().maxMessageLength() >= messageLength)
                {
                    return channel;
                }
            }
            final int termLength = termLength(messageLength);
            try
            {
                return open(termLength);
            }
            catch (final IOException ex)
            {
                throw new IllegalStateException("floor+aeron: no channel with " + termLength + "-byte terms", ex);
            }
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
                int work = 0;
                for (final Channel channel : channels)
                {
                    work += channel.replies().poll(channel.assembly(), FRAGMENTS);
                }
                idle.idle(work);
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
            return new AeronLane(number, observer, channels[0]);
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

        /** A request publication, the reply subscription of its session and the reassembly of its replies. */
        private record Channel(Publication requests, Subscription replies, Reassembly assembly, boolean exclusive)
        {
        }

        /** A lane with its message in direct memory: the lane's number, then the payload. */
        private final class AeronLane extends Lane
        {
            UnsafeBuffer message = new UnsafeBuffer(ByteBuffer.allocateDirect(EngineFloorTarget.HEADER));
            Channel channel;

            AeronLane(final int number, final CallObserver observer, final Channel channel)
            {
                super(number, observer);
                this.channel = channel;
                message.putInt(0, number);
            }

            @Override
            void prepare()
            {
                final int length = EngineFloorTarget.HEADER + sent.length;
                channel = channelFor(length); // refuses a payload no term carries, before anything is sent
                message = new UnsafeBuffer(ByteBuffer.allocateDirect(length));
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
                final Channel on = channel;
                if (on.exclusive())
                {
                    synchronized (on)
                    {
                        offer(on);
                    }
                }
                else
                {
                    offer(on);
                }
            }

            private void offer(final Channel on)
            {
                long result;
                // A lane has one message in flight: back pressure is the term window, brief; spin it out.
                while ((result = on.requests().offer(message, 0, EngineFloorTarget.HEADER + sent.length)) < 0)
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
