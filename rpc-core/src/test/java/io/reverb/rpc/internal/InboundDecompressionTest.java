package io.reverb.rpc.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.reverb.rpc.compression.Codec;
import io.reverb.rpc.compression.GzipCodec;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * Inflation stops at the limit while streaming, never allocating a size the stream claims, and every byte it
 * allocates is held in the connection's budget: kept on success until released, given back on any failure.
 */
class InboundDecompressionTest
{
    private static final int LIMIT = 64 * 1024;

    /** A codec that inflates anything into endless zeros, counting what it produced. */
    private static final class Endless implements Codec
    {
        final AtomicLong produced = new AtomicLong();

        @Override
        public String name()
        {
            return "endless";
        }

        @Override
        public OutputStream compress(final OutputStream out)
        {
            throw new UnsupportedOperationException();
        }

        @Override
        public InputStream decompress(final InputStream in)
        {
            return new InputStream()
            {
                @Override
                public int read()
                {
                    produced.incrementAndGet();
                    return 0;
                }

                @Override
                public int read(final byte[] b, final int off, final int len)
                {
                    produced.addAndGet(len);
                    return len;
                }
            };
        }
    }

    @Test
    void shouldStopAnEndlessStreamJustPastTheLimitAndHoldNothing() throws IOException
    {
        final Endless endless = new Endless();
        final InflationBudget budget = new InflationBudget(Long.MAX_VALUE);
        final byte[][] out = new byte[1][];

        assertThat(InboundDecompression.decompress(endless, ByteBuffer.allocate(16), 0, 16, LIMIT, budget, out))
            .isEqualTo(InboundDecompression.TOO_LARGE);
        assertThat(endless.produced.get()).as("bytes inflated").isEqualTo(LIMIT + 1);
        assertThat(out[0]).isNull();
        assertThat(budget.used()).as("nothing stays held").isZero();
        assertThat(budget.peak()).as("never more than the last two arrays").isLessThanOrEqualTo(2L * (LIMIT + 1));
    }

    @Test
    void shouldHoldTheInflatedArrayInTheBudgetUntilReleased() throws IOException
    {
        final byte[] gzipped = WireFrames.gzip(new byte[LIMIT]);
        final InflationBudget budget = new InflationBudget(1 << 20);
        final byte[][] out = new byte[1][];

        final int length = InboundDecompression.decompress(GzipCodec.INSTANCE, ByteBuffer.wrap(gzipped), 0,
            gzipped.length, LIMIT, budget, out);
        assertThat(length).isEqualTo(LIMIT);
        assertThat(budget.used()).isEqualTo(out[0].length);
        budget.release(out[0].length);
        assertThat(budget.used()).isZero();
    }

    @Test
    void shouldRefuseWhenTheBudgetHasNoRoomAndGiveBackWhatItTook() throws IOException
    {
        final byte[] gzipped = WireFrames.gzip(new byte[LIMIT]);
        final InflationBudget budget = new InflationBudget(LIMIT / 2);
        final byte[][] out = new byte[1][];

        assertThat(InboundDecompression.decompress(GzipCodec.INSTANCE, ByteBuffer.wrap(gzipped), 0, gzipped.length,
            LIMIT, budget, out)).isEqualTo(InboundDecompression.OVER_BUDGET);
        assertThat(out[0]).isNull();
        assertThat(budget.used()).isZero();
        assertThat(budget.peak()).isLessThanOrEqualTo(LIMIT / 2);
    }

    @Test
    void shouldInflateIntoWhatWasPrepaidAndGiveBackTheRest() throws IOException
    {
        final byte[] gzipped = WireFrames.gzip(new byte[1000]);
        final InflationBudget budget = new InflationBudget(LIMIT * 4L);
        assertThat(budget.tryReserve(LIMIT + 1)).isTrue(); // what the lane reserves while the message waits
        final byte[][] out = new byte[1][];

        assertThat(InboundDecompression.decompress(GzipCodec.INSTANCE, ByteBuffer.wrap(gzipped), 0, gzipped.length,
            LIMIT, budget, LIMIT + 1, out)).isEqualTo(1000);
        assertThat(budget.used()).as("only the array stays held").isEqualTo(out[0].length);
        assertThat(budget.peak()).as("nothing beyond the prepaid bytes was needed").isEqualTo(LIMIT + 1);

        budget.release(out[0].length);
        assertThat(budget.tryReserve(LIMIT + 1)).isTrue();
        assertThatThrownBy(() -> InboundDecompression.decompress(GzipCodec.INSTANCE,
            ByteBuffer.wrap(new byte[] {1, 2, 3}), 0, 3, LIMIT, budget, LIMIT + 1, new byte[1][]))
            .as("garbage is no gzip").isInstanceOf(IOException.class);
        assertThat(budget.used()).as("a failure gives the prepaid bytes back too").isZero();
    }

    @Test
    void shouldNotTrustTheSizeAGzipTrailerClaims()
    {
        final byte[] gzipped = WireFrames.gzip(new byte[1000]);
        // ISIZE, the trailer's last four bytes: claim 2 GiB
        gzipped[gzipped.length - 1] = 0x7f;
        final InflationBudget budget = new InflationBudget(1 << 20);

        assertThatThrownBy(() -> InboundDecompression.decompress(GzipCodec.INSTANCE, ByteBuffer.wrap(gzipped), 0,
            gzipped.length, LIMIT, budget, new byte[1][])).isInstanceOf(IOException.class);
        assertThat(budget.peak()).as("allocated by what inflated, not by the claim").isLessThan(16 * 1024);
        assertThat(budget.used()).isZero();
    }
}
