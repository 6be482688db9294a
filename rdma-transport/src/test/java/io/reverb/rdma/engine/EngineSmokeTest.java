package io.reverb.rdma.engine;

import static io.reverb.rdma.engine.EngineTestSupport.*;
import static org.assertj.core.api.Assertions.assertThat;

import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.agrona.concurrent.UnsafeBuffer;

class EngineSmokeTest
{
    @Test
    void shouldDeliverSmallAndLargeMessages() throws Exception
    {
        try (RdmaEngine server = RdmaEngine.open("shm", config(PollingMode.ADAPTIVE).name("server"));
            RdmaEngine client = RdmaEngine.open("shm", config(PollingMode.ADAPTIVE).name("client")))
        {
            final BlockingQueue<byte[]> received = new ArrayBlockingQueue<>(100);
            final AtomicReference<Connection> serverSide = new AtomicReference<>();
            final String name = uniqueName("smoke");
            server.listen(name, c ->
            {
                serverSide.set(c);
                c.setHandler((buf, off, len) ->
                {
                    final byte[] bytes = new byte[len];
                    buf.getBytes(off, bytes);
                    received.add(bytes);
                });
            });
            final Connection connection = client.connect(name);
            connection.setHandler((buf, off, len) -> { });
            final MessageClaim claim = new MessageClaim();
            final int[] sizes = {0, 1, 100, 1023, 1024, 1025, 100_000, 3_000_000};
            for (int i = 0; i < sizes.length; i++)
            {
                send(connection, claim, sizes[i], i);
            }
            for (int i = 0; i < sizes.length; i++)
            {
                final byte[] bytes = received.poll(30, TimeUnit.SECONDS);
                assertThat(bytes).as("message " + i).isNotNull();
                assertThat(bytes).hasSize(sizes[i]);
                assertThat(check(new UnsafeBuffer(bytes), 0, bytes.length, i)).isTrue();
            }
            assertQuiescent(connection, serverSide.get());
            connection.close();
            await("server side closed", () -> serverSide.get().isClosed());
            assertThat(connection.isClosed()).isTrue();
        }
    }
}
