package io.reverb.rpc.internal;

import static org.assertj.core.api.Assertions.assertThat;

import io.reverb.rpc.compression.GzipCodec;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * A connection that inflates beyond its free allowance is paced: its inflater rests between slices, so a compression
 * flood holds at most half a core and never a scheduler tick on end (CompressionFloodAttack: a victim's p99.9 went
 * from 4 ms, one tick, to within 1.2x of its value alone). Counted, not timed: the rests are counted, over a window
 * longer than the test, with a slice of 0 in the second case, so that the outcome does not depend on the machine's
 * speed or load.
 */
class InflationPacingTest
{
    private static final int MIB = 1 << 20;
    private static final long LONG_WINDOW = TimeUnit.HOURS.toNanos(1);

    private static ByteBuffer gzipOfZeros(final int length) throws IOException
    {
        final ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (OutputStream out = GzipCodec.INSTANCE.compress(bytes))
        {
            out.write(new byte[length]);
        }
        return ByteBuffer.wrap(bytes.toByteArray());
    }

    private static int inflate(final ByteBuffer gzip, final InflationBudget budget, final int limit) throws IOException
    {
        final byte[][] out = new byte[1][];
        final int length = InboundDecompression.decompress(GzipCodec.INSTANCE, gzip, 0, gzip.limit(), limit, budget,
            out);
        if (length >= 0)
        {
            budget.release(out[0].length);
        }
        return length;
    }

    @Test
    void aMessageWithinTheAllowanceIsNotPaced() throws IOException
    {
        final InflationBudget budget = new InflationBudget(64L * MIB, InflationBudget.FREE_BYTES_PER_WINDOW,
            LONG_WINDOW, InflationBudget.PACING_SLICE_NANOS);
        final int size = (int)(InflationBudget.FREE_BYTES_PER_WINDOW / 2);
        assertThat(inflate(gzipOfZeros(size), budget, 16 * MIB)).isEqualTo(size);
        assertThat(budget.rests()).isZero();
        assertThat(budget.used()).isZero();
    }

    @Test
    void aConnectionInflatingBeyondItsAllowanceRests() throws IOException
    {
        final InflationBudget budget = new InflationBudget(64L * MIB, MIB, LONG_WINDOW, 0);
        final ByteBuffer bomb = gzipOfZeros(4 * MIB - 64);
        for (int i = 0; i < 12; i++)
        {
            assertThat(inflate(bomb.duplicate(), budget, 4 * MIB)).isEqualTo(4 * MIB - 64);
        }
        // past the first MiB, every chunk read rests (a slice of 0)
        assertThat(budget.rests()).as("rests of a connection that inflated 48 MiB at once")
            .isGreaterThanOrEqualTo((48L * MIB - 64 * 12 - MIB) / InboundDecompression.CHUNK);
        assertThat(budget.used()).isZero();
    }
}
