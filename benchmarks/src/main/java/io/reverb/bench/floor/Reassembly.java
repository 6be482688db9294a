package io.reverb.bench.floor;

import io.aeron.logbuffer.FragmentHandler;
import io.aeron.logbuffer.FrameDescriptor;
import io.aeron.logbuffer.Header;
import org.agrona.DirectBuffer;
import org.agrona.ExpandableDirectByteBuffer;

/**
 * Puts an Aeron message split into MTU-sized fragments back together before its handler sees it: a message longer
 * than a frame's payload (1,376 bytes on IPC's default MTU) arrives as a first fragment, middle ones and a last one,
 * all of one session in order. One instance per session (an image); a fragment is copied once into a buffer that
 * grows up to {@code limit} bytes; an unfragmented message is handed on without a copy.
 */
final class Reassembly implements FragmentHandler
{
    private static final int UNFRAGMENTED = FrameDescriptor.UNFRAGMENTED & 0xFF;
    private static final int BEGIN = FrameDescriptor.BEGIN_FRAG_FLAG & 0xFF;
    private static final int END = FrameDescriptor.END_FRAG_FLAG & 0xFF;

    private final FragmentHandler handler;
    private final int limit;
    private final ExpandableDirectByteBuffer buffer = new ExpandableDirectByteBuffer(4096);
    // bytes of the message being assembled; -1 between messages or while skipping one that cannot be kept
    private int length = -1;

    /**
     * @param handler who hears of each whole message.
     * @param limit   the longest message kept; a longer one is dropped whole (a peer's length is not trusted).
     */
    Reassembly(final FragmentHandler handler, final int limit)
    {
        this.handler = handler;
        this.limit = limit;
    }

    @Override
    public void onFragment(final DirectBuffer fragment, final int offset, final int fragmentLength, final Header header)
    {
        final int flags = header.flags() & 0xFF;
        if ((flags & UNFRAGMENTED) == UNFRAGMENTED)
        {
            length = -1;
            handler.onFragment(fragment, offset, fragmentLength, header);
            return;
        }
        if ((flags & BEGIN) != 0)
        {
            length = 0;
        }
        else if (length < 0)
        {
            return; // the rest of a message whose start this image never saw (or that was too long)
        }
        if ((long)length + fragmentLength > limit)
        {
            length = -1;
            return;
        }
        buffer.putBytes(length, fragment, offset, fragmentLength);
        length += fragmentLength;
        if ((flags & END) != 0)
        {
            final int whole = length;
            length = -1;
            handler.onFragment(buffer, 0, whole, header);
        }
    }
}
