package io.reverb.rdma.provider.disni;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The Java-level gate behind the SPI completion channel (the per-CQ event pumps that feed it need a
 * device and are covered by DisniConformanceTest only).
 */
@Timeout(10)
class DisniCompletionChannelTest
{
    private final DisniCompletionChannel channel = new DisniCompletionChannel();

    @Test
    void shouldReturnEventsSignalledBeforeAwait() throws IOException
    {
        channel.signal(1);
        channel.signal(2);

        assertThat(channel.await(TimeUnit.SECONDS.toNanos(1))).isEqualTo(3);
        assertThat(channel.await(0)).isZero();
    }

    @Test
    void shouldWakeAWaiterWhenAPumpSignals() throws Exception
    {
        final CompletableFuture<Integer> events = CompletableFuture.supplyAsync(() -> awaitQuietly(TimeUnit.SECONDS.toNanos(5)));

        channel.signal(1);

        assertThat(events.get(5, TimeUnit.SECONDS)).isEqualTo(1);
    }

    @Test
    void shouldReturnZeroOnTimeoutAndAtOnceForZeroTimeout() throws IOException
    {
        final long start = System.nanoTime();
        assertThat(channel.await(0)).isZero();
        assertThat(channel.await(TimeUnit.MILLISECONDS.toNanos(20))).isZero();
        assertThat(System.nanoTime() - start).isGreaterThanOrEqualTo(TimeUnit.MILLISECONDS.toNanos(20));
    }

    @Test
    void shouldReturnZeroForAWakeupEvenIfItCameBeforeTheAwait() throws IOException
    {
        channel.wakeup();

        assertThat(channel.await(TimeUnit.SECONDS.toNanos(5))).isZero();
        assertThat(channel.await(TimeUnit.MILLISECONDS.toNanos(10))).as("one wake-up, one return").isZero();
    }

    @Test
    void shouldReportEventsBeforeAPendingWakeup() throws IOException
    {
        channel.wakeup();
        channel.signal(1);

        assertThat(channel.await(TimeUnit.SECONDS.toNanos(1))).isEqualTo(1);
        assertThat(channel.await(TimeUnit.SECONDS.toNanos(1))).isZero();
    }

    @Test
    void shouldFailAwaitOnceClosedAndReleaseAWaiter() throws Exception
    {
        final CompletableFuture<Object> waiter = CompletableFuture.supplyAsync(() ->
        {
            try
            {
                return channel.await(TimeUnit.SECONDS.toNanos(5));
            }
            catch (final IOException ex)
            {
                return ex;
            }
        });
        Thread.sleep(20);

        channel.close();
        channel.close();

        assertThat(waiter.get(5, TimeUnit.SECONDS)).isInstanceOf(IOException.class);
        assertThatThrownBy(() -> channel.await(0)).isInstanceOf(IOException.class).hasMessageContaining("closed");
    }

    private int awaitQuietly(final long nanos)
    {
        try
        {
            return channel.await(nanos);
        }
        catch (final IOException ex)
        {
            throw new IllegalStateException(ex);
        }
    }
}
