package io.reverb.rdma.provider.shm;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.ByteBuffer;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.Test;

/** The header both shm rings share, and the checks of a peer's file against it. */
class RingLayoutTest
{
    @Test
    void shouldAcceptARingItSetUpItself()
    {
        final UnsafeBuffer buffer = new UnsafeBuffer(ByteBuffer.allocate(CqRing.LAYOUT.fileLength(8)));
        assertThat(CqRing.LAYOUT.isValid(buffer)).as("no magic yet").isFalse();
        CqRing.LAYOUT.initialise(buffer, 8);
        assertThat(CqRing.LAYOUT.isValid(buffer)).isTrue();
        assertThat(CqRing.LAYOUT.capacity(buffer)).isEqualTo(8);
        assertThat(RecvRing.LAYOUT.isValid(buffer)).as("another ring's magic").isFalse();
    }

    @Test
    void shouldRefuseAPeersCapacityThatIsNotAPositivePowerOfTwoOrDoesNotFit()
    {
        final UnsafeBuffer buffer = new UnsafeBuffer(ByteBuffer.allocate(RecvRing.LAYOUT.fileLength(4)));
        RecvRing.LAYOUT.initialise(buffer, 4);
        assertThat(RecvRing.LAYOUT.isValid(buffer)).isTrue();
        for (final int capacity : new int[] {0, -4, 3, 8, 1 << 30, Integer.MIN_VALUE})
        {
            buffer.putInt(RecvRing.CAPACITY_OFFSET, capacity);
            assertThat(RecvRing.LAYOUT.isValid(buffer)).as("capacity %d", capacity).isFalse();
        }
        // 2^25 entries of 128 bytes overflow an int to exactly ENTRIES_OFFSET: must not pass as "fits".
        buffer.putInt(RecvRing.CAPACITY_OFFSET, 1 << 25);
        assertThat(RecvRing.LAYOUT.isValid(buffer)).isFalse();
    }

    @Test
    void shouldRefuseARingLargerThanOneMapping()
    {
        assertThatThrownBy(() -> CqRing.LAYOUT.fileLength(1 << 30)).isInstanceOf(IllegalArgumentException.class);
    }
}
