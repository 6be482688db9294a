package io.reverb.rdma.engine;

import static org.assertj.core.api.Assertions.assertThat;

import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.Test;

class ControlQueueTest
{
    private final ControlFrameFlyweight frame = new ControlFrameFlyweight();

    @Test
    void shouldKeepOrderAcrossWrapAndGrowth()
    {
        final ControlQueue queue = new ControlQueue(2);
        final UnsafeBuffer batch = new UnsafeBuffer(new byte[8 * ControlFrameFlyweight.LENGTH]);
        queue.add(Wire.CONTROL_CTS, 0, 1, 100, 7, 64);
        queue.add(Wire.CONTROL_CTS, 0, 2, 200, 8, 128);
        assertThat(queue.copyTo(batch, 0, 1)).isFalse();
        queue.remove(1);
        queue.add(Wire.CONTROL_REFUSE, Wire.REFUSE_TOO_LARGE, 3, 0, 0, 4096); // wraps
        queue.add(Wire.CONTROL_CLOSE, 0, 0, 0, 0, 0); // grows
        assertThat(queue.size()).isEqualTo(3);

        assertThat(queue.copyTo(batch, 0, 3)).as("carries the CLOSE").isTrue();
        frame.wrap(batch, 0);
        assertThat(frame.type()).isEqualTo(Wire.CONTROL_CTS);
        assertThat(frame.id()).isEqualTo(2);
        assertThat(frame.address()).isEqualTo(200);
        assertThat(frame.rkey()).isEqualTo(8);
        assertThat(frame.length()).isEqualTo(128);
        frame.wrap(batch, ControlFrameFlyweight.LENGTH);
        assertThat(frame.type()).isEqualTo(Wire.CONTROL_REFUSE);
        assertThat(frame.code()).isEqualTo(Wire.REFUSE_TOO_LARGE);
        assertThat(frame.id()).isEqualTo(3);
        assertThat(frame.length()).isEqualTo(4096);
        frame.wrap(batch, 2 * ControlFrameFlyweight.LENGTH);
        assertThat(frame.type()).isEqualTo(Wire.CONTROL_CLOSE);

        queue.remove(3);
        assertThat(queue.size()).isZero();
    }

    @Test
    void clearDropsEverything()
    {
        final ControlQueue queue = new ControlQueue(4);
        queue.add(Wire.CONTROL_CLOSE, 0, 0, 0, 0, 0);
        queue.clear();
        assertThat(queue.size()).isZero();
    }
}
