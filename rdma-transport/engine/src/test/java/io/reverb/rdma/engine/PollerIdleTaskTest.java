package io.reverb.rdma.engine;

import static io.reverb.rdma.engine.EngineTestSupport.*;
import static org.assertj.core.api.Assertions.assertThat;

import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.Test;

/**
 * {@link EngineConfig#idleTask(BooleanSupplier)}: run by the engine's own poller threads once they find no work, and
 * kept by {@link EngineConfig#copy()}.
 */
class PollerIdleTaskTest
{
    @Test
    void shouldRunTheIdleTaskOnThePollerThreadsOfAnIdleEngine() throws Exception
    {
        final AtomicInteger runs = new AtomicInteger();
        final Set<String> threads = ConcurrentHashMap.newKeySet();
        final BooleanSupplier task = () ->
        {
            threads.add(Thread.currentThread().getName());
            runs.incrementAndGet();
            return false;
        };
        final EngineConfig server = config(PollingMode.ADAPTIVE).idleTask(task); // EnginePair names it "server"
        try (EnginePair pair = new EnginePair(server, config(PollingMode.ADAPTIVE), (buffer, offset, length) -> { }))
        {
            await("the idle task ran", () -> runs.get() > 0);
            assertThat(threads).allSatisfy(name -> assertThat(name).startsWith("server-poller-"));
            assertQuiescent(pair.client, pair.server);
        }
    }

    @Test
    void shouldKeepTheIdleTaskInACopy()
    {
        final BooleanSupplier task = () -> false;
        assertThat(new EngineConfig().idleTask(task).copy().idleTask()).isSameAs(task);
        assertThat(new EngineConfig().idleTask()).isNull();
    }
}
