package io.reverb.rpc.internal;

import io.reverb.rpc.wire.FrameType;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import reactor.core.Disposable;
import reactor.core.scheduler.Scheduler;

/**
 * The PINGs of keep-alive, for either end of a connection (the client's {@code RpcChannel.Builder.keepAlive}, the
 * server's {@code RpcServer.Builder.keepAlive}): one PING at a time, each with its own timeout, so that a silent peer
 * is noticed keep-alive interval + timeout after its last answer, not at the next tick after the timeout. Any frame
 * from the peer after the PING left counts as its answer (as grpc-java's {@code KeepAliveManager.onDataReceived}): a
 * PING whose answer queues behind megabytes of messages on a slow link does not cost the connection.
 *
 * <p>Threads: {@link #ping} from the owner's one periodic task (never two at once), {@link #frameReceived} from the
 * transport's thread, {@link #onAck} from the transport's thread, the timeout from the timer.
 */
final class KeepAlivePings
{
    private static final VarHandle FRAMES_RECEIVED;

    private final WireWriter connection;
    /** Nothing came from the peer within the timeout after the PING left: closes the connection. */
    private final Runnable peerSilent;
    private final Scheduler timer;
    private final long timeoutNanos;
    /** Payload of the PING awaiting its ACK, 0 for none. */
    private final AtomicLong outstanding = new AtomicLong();
    /** The outstanding PING's own deadline. */
    private volatile Disposable timeout;
    private long count; // the owner's periodic task only
    /**
     * Frames received from the peer, counted on the transport's thread (a release store: no fence on the frame path).
     * Compared for inequality only: wrapping around is harmless.
     */
    @SuppressWarnings("unused") // through FRAMES_RECEIVED
    private int framesReceived;
    /** {@link #framesReceived} when the outstanding PING left (written before its timeout is scheduled). */
    private int framesAtPing;

    static
    {
        try
        {
            FRAMES_RECEIVED = MethodHandles.lookup().findVarHandle(KeepAlivePings.class, "framesReceived", int.class);
        }
        catch (final ReflectiveOperationException e)
        {
            throw new ExceptionInInitializerError(e);
        }
    }

    /**
     * @param connection   the connection the PINGs go over.
     * @param timer        schedules the timeouts.
     * @param timeoutNanos how long a PING may go unanswered (with nothing else from the peer).
     * @param peerSilent   closes the connection when nothing came from the peer within the timeout after a PING left.
     */
    KeepAlivePings(final WireWriter connection, final Scheduler timer, final long timeoutNanos, final Runnable peerSilent)
    {
        this.connection = connection;
        this.peerSilent = peerSilent;
        this.timer = timer;
        this.timeoutNanos = timeoutNanos;
    }

    /** A frame came from the peer (the transport's thread). */
    void frameReceived()
    {
        FRAMES_RECEIVED.setRelease(this, (int)FRAMES_RECEIVED.get(this) + 1);
    }

    /** PINGs the peer now, unless a PING is still unanswered (its own timeout watches it). */
    void ping()
    {
        if (outstanding.get() != 0)
        {
            return;
        }
        final long payload = ++count;
        outstanding.set(payload);
        framesAtPing = (int)FRAMES_RECEIVED.getAcquire(this);
        timeout = timer.schedule(() -> onTimeout(payload), timeoutNanos, TimeUnit.NANOSECONDS);
        if (!connection.write(new OutboundFrame.Control(FrameType.PING, 0, 0, payload)))
        {
            onAck(payload); // closed meanwhile: nothing to wait for
        }
    }

    /**
     * A PING's ACK arrived.
     *
     * @param payload its payload.
     */
    void onAck(final long payload)
    {
        if (payload > 0 && outstanding.compareAndSet(payload, 0))
        {
            final Disposable t = timeout;
            if (t != null)
            {
                t.dispose();
            }
        }
    }

    /** The connection ended: the outstanding PING's timeout goes. */
    void stop()
    {
        final Disposable t = timeout;
        if (t != null)
        {
            t.dispose();
        }
    }

    private void onTimeout(final long payload)
    {
        if (connection.closed || outstanding.get() != payload)
        {
            return; // answered (or the connection ended) meanwhile
        }
        if ((int)FRAMES_RECEIVED.getAcquire(this) != framesAtPing)
        {
            onAck(payload); // the peer was heard from since the PING left: as good as its answer
            return;
        }
        peerSilent.run();
    }
}
