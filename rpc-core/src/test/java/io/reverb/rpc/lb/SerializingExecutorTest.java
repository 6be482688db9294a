package io.reverb.rpc.lb;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The load balancer's serializing executor goes on after a task that throws, an Error included: a policy's
 * AssertionError left its drain counter up for good, and every later task (resolver results, state changes, the
 * channel's close) only queued.
 */
class SerializingExecutorTest
{
    @Test
    void shouldRunLaterTasksAfterOneThrowsAnError()
    {
        final SerializingExecutor executor = new SerializingExecutor();
        final List<String> ran = new ArrayList<>();
        executor.execute(() ->
        {
            throw new AssertionError("a policy's bug");
        });
        executor.execute(() -> ran.add("after the error"));
        executor.execute(() ->
        {
            throw new IllegalStateException("a runtime failure");
        });
        executor.execute(() -> ran.add("after the exception"));
        assertThat(ran).containsExactly("after the error", "after the exception");
    }

    @Test
    void shouldRunTheTasksQueuedBehindAVmErrorBeforeRethrowingIt()
    {
        final SerializingExecutor executor = new SerializingExecutor();
        final List<String> ran = new ArrayList<>();
        assertThatThrownBy(() -> executor.execute(() ->
        {
            executor.execute(() -> ran.add("queued behind it"));
            throw new OutOfMemoryError("simulated");
        })).isInstanceOf(OutOfMemoryError.class);
        assertThat(ran).containsExactly("queued behind it");
        executor.execute(() -> ran.add("later"));
        assertThat(ran).containsExactly("queued behind it", "later");
    }
}
