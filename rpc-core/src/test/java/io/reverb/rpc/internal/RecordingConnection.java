package io.reverb.rpc.internal;

import io.reverb.common.ClaimResult;
import io.reverb.common.WriteClaim;
import io.reverb.rpc.transport.Connection;
import io.reverb.rpc.transport.ResourceUsage;
import io.reverb.rpc.wire.FrameHeaderFlyweight;
import io.reverb.rpc.wire.FrameType;
import java.lang.management.ManagementFactory;
import java.lang.management.MonitorInfo;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * A fake transport connection for call-path tests: keeps every committed message, notes the monitors the writing
 * thread holds at each claim, and signals batch ends if told to.
 */
class RecordingConnection implements Connection, WriteClaim.Committer
{
    /** Synchronized: a timer (keep-alive, idle) may write while a test reads; copy under its monitor to iterate. */
    final List<byte[]> messages = Collections.synchronizedList(new ArrayList<>());
    final List<List<String>> monitorsAtClaim = new ArrayList<>();
    private final boolean signalsReadComplete;
    /** While set, every claim is back-pressured (a peer that reads nothing). */
    volatile boolean backPressured;

    /** A connection that does not signal batch ends (as most transports). */
    RecordingConnection()
    {
        this(false);
    }

    /** @param signalsReadComplete what {@link #signalsReadComplete()} answers. */
    RecordingConnection(final boolean signalsReadComplete)
    {
        this.signalsReadComplete = signalsReadComplete;
    }

    @Override
    public boolean signalsReadComplete()
    {
        return signalsReadComplete;
    }

    @Override
    public int tryClaim(final int length, final WriteClaim claim)
    {
        if (backPressured)
        {
            return ClaimResult.BACK_PRESSURED;
        }
        final List<String> held = new ArrayList<>();
        for (final MonitorInfo monitor : ManagementFactory.getThreadMXBean()
            .getThreadInfo(new long[]{Thread.currentThread().getId()}, true, false)[0].getLockedMonitors())
        {
            held.add(monitor.getClassName());
        }
        monitorsAtClaim.add(held);
        claim.wrap(ByteBuffer.allocate(length), 0, length, this, 0);
        return ClaimResult.OK;
    }

    @Override
    public int commit(final WriteClaim claim)
    {
        final byte[] bytes = new byte[claim.length()];
        claim.buffer().get(claim.offset(), bytes);
        messages.add(bytes);
        return ClaimResult.OK;
    }

    @Override
    public void abort(final WriteClaim claim)
    {
    }

    @Override
    public int maxMessageLength()
    {
        return 1 << 20;
    }

    /** Whether the connection asked the transport to close it. */
    volatile boolean closeAsked;

    @Override
    public void close()
    {
        closeAsked = true;
    }

    @Override
    public boolean isOpen()
    {
        return true;
    }

    @Override
    public String localAddress()
    {
        return "test://local";
    }

    @Override
    public String remoteAddress()
    {
        return "test://remote";
    }

    /**
     * @param message one transport message.
     * @return the types of the frames in it, in order.
     */
    static List<FrameType> frameTypes(final byte[] message)
    {
        final ByteBuffer buffer = ByteBuffer.wrap(message);
        final FrameHeaderFlyweight header = new FrameHeaderFlyweight();
        final List<FrameType> types = new ArrayList<>();
        for (int at = 0; at < message.length; at += header.frameLength())
        {
            header.wrap(buffer, at);
            types.add(FrameType.fromValue(header.type()));
        }
        return types;
    }

    @Override
    public ResourceUsage resourceUsage()
    {
        return ResourceUsage.NONE;
    }
}
