package io.reverb.rpc.internal;

import io.reverb.rpc.compression.Codec;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.util.Arrays;

/**
 * Decompresses the body of a COMPRESSED MESSAGE into a heap array, reading no more than the receiver's inbound limit
 * allows (plus one byte, to tell "exactly the limit" from "over it"): a small frame that inflates to gigabytes (a zip
 * bomb) costs at most the limit in memory and in work. On the server the bytes also count against the connection's
 * {@link InflationBudget}.
 */
final class InboundDecompression
{
    /** Bytes inflated per read: the unit in which a connection's inflation is paced. */
    static final int CHUNK = 64 * 1024;
    /** The message inflates past the limit. */
    static final int TOO_LARGE = -1;
    /** The connection's budget for inflated bytes has no room for the message (see {@link InflationBudget}). */
    static final int OVER_BUDGET = -2;

    private InboundDecompression()
    {
    }

    /**
     * Inflates without a connection budget (the client's side).
     *
     * @param codec  the codec the frame names.
     * @param buffer the frame's buffer.
     * @param start  where the compressed bytes start.
     * @param end    where they end.
     * @param limit  the largest decompressed message accepted.
     * @param out    receives the array (index 0) on success.
     * @return the decompressed length, or {@link #TOO_LARGE}.
     * @throws IOException if the bytes are not valid for the codec.
     */
    static int decompress(final Codec codec, final ByteBuffer buffer, final int start, final int end, final int limit,
        final byte[][] out) throws IOException
    {
        return decompress(codec, buffer, start, end, limit, null, out);
    }

    /**
     * Inflates within a connection's budget, nothing reserved beforehand.
     *
     * @return the decompressed length, {@link #TOO_LARGE} or {@link #OVER_BUDGET}.
     * @throws IOException if the bytes are not valid for the codec.
     * @see #decompress(Codec, ByteBuffer, int, int, int, InflationBudget, long, byte[][])
     */
    static int decompress(final Codec codec, final ByteBuffer buffer, final int start, final int end, final int limit,
        final InflationBudget budget, final byte[][] out) throws IOException
    {
        return decompress(codec, buffer, start, end, limit, budget, 0, out);
    }

    /**
     * Inflates into an array that grows as the codec produces bytes, never to more than the limit plus one: no size
     * the stream claims (gzip's trailer, a codec's header) is trusted or allocated up front. With a budget, the arrays
     * alive at any moment (two during a growth's copy) are reserved in it before they are allocated, using first
     * what was reserved for the message beforehand; on success the caller holds {@code out[0].length} bytes of it
     * (and releases them when the message is consumed), on any failure nothing stays reserved, the prepaid bytes
     * included.
     *
     * @param codec   the codec the frame names.
     * @param buffer  the frame's buffer.
     * @param start   where the compressed bytes start.
     * @param end     where they end.
     * @param limit   the largest decompressed message accepted.
     * @param budget  the connection's budget, or null for none.
     * @param prepaid bytes already reserved in the budget for this message (0 for none); taken over by this call.
     * @param out     receives the array (index 0) on success.
     * @return the decompressed length, {@link #TOO_LARGE} or {@link #OVER_BUDGET}.
     * @throws IOException if the bytes are not valid for the codec.
     */
    static int decompress(final Codec codec, final ByteBuffer buffer, final int start, final int end, final int limit,
        final InflationBudget budget, final long prepaid, final byte[][] out) throws IOException
    {
        final Reservation held = new Reservation(budget, prepaid);
        boolean kept = false;
        try
        {
            final ByteBuffer compressed = buffer.duplicate();
            compressed.limit(end).position(start);
            int size = (int)Math.min(limit + 1L, Math.max(256L, 4L * (end - start)));
            if (!held.cover(size))
            {
                return OVER_BUDGET;
            }
            byte[] array = new byte[size];
            int length = 0;
            if (budget != null)
            {
                budget.inflationStarts();
            }
            try (InputStream in = codec.decompress(new BufferInput(compressed)))
            {
                while (true)
                {
                    if (length == array.length)
                    {
                        if (length > limit)
                        {
                            return TOO_LARGE;
                        }
                        final int grown = (int)Math.min(limit + 1L, 2L * array.length);
                        // the old and the new array live together during the copy: both are held
                        if (!held.cover((long)size + grown))
                        {
                            return OVER_BUDGET;
                        }
                        array = Arrays.copyOf(array, grown);
                        size = grown;
                    }
                    final int n = in.read(array, length, Math.min(CHUNK, array.length - length));
                    if (n < 0)
                    {
                        break;
                    }
                    length += n;
                    if (budget != null)
                    {
                        budget.inflated(n); // a connection inflating beyond its allowance is paced
                    }
                }
            }
            if (length > limit)
            {
                return TOO_LARGE;
            }
            held.keep(array.length);
            kept = true;
            out[0] = array;
            return length;
        }
        finally
        {
            if (!kept)
            {
                held.keep(0);
            }
        }
    }

    /** What one inflation holds in the budget: never less than its arrays alive, trimmed at the end. */
    private static final class Reservation
    {
        private final InflationBudget budget;
        private long held;

        Reservation(final InflationBudget budget, final long prepaid)
        {
            this.budget = budget;
            this.held = budget == null ? 0 : prepaid;
        }

        /** @return true if {@code bytes} are held (reserving the difference), false if the budget has no room. */
        boolean cover(final long bytes)
        {
            if (budget == null || bytes <= held)
            {
                return true;
            }
            if (!budget.tryReserve(bytes - held))
            {
                return false;
            }
            held = bytes;
            return true;
        }

        /** Gives back all but {@code bytes}. */
        void keep(final long bytes)
        {
            if (budget != null && held > bytes)
            {
                budget.release(held - bytes);
                held = bytes;
            }
        }
    }

    /** An input stream over a buffer's remaining bytes. */
    private static final class BufferInput extends InputStream
    {
        private final ByteBuffer buffer;

        BufferInput(final ByteBuffer buffer)
        {
            this.buffer = buffer;
        }

        @Override
        public int read()
        {
            return buffer.hasRemaining() ? buffer.get() & 0xFF : -1;
        }

        @Override
        public int read(final byte[] b, final int off, final int len)
        {
            if (len == 0)
            {
                return 0;
            }
            if (!buffer.hasRemaining())
            {
                return -1;
            }
            final int n = Math.min(len, buffer.remaining());
            buffer.get(b, off, n);
            return n;
        }

        @Override
        public int available()
        {
            return buffer.remaining();
        }
    }
}
