package io.reverb.rpc.lb;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.StringValue;
import io.reverb.rpc.MethodDescriptor;
import io.reverb.rpc.RpcServer;
import io.reverb.rpc.protobuf.ProtoMarshaller;
import io.reverb.rpc.testing.Await;
import io.reverb.rpc.transport.Transports;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The {@code inproc://} replica servers of one test that balances calls over several: each gets an address of its
 * own, and {@link #closeAll} stops them all after the test and checks that every inproc buffer came back.
 */
final class ReplicaServers
{
    /** How long a test waits for anything. */
    static final Duration TIMEOUT = Duration.ofSeconds(20);

    private static final AtomicInteger IDS = new AtomicInteger();

    private final List<RpcServer> servers = new ArrayList<>();

    /**
     * @param service the service's full name.
     * @param method  the method's name in it.
     * @return a unary method taking and answering a {@link StringValue}.
     */
    static MethodDescriptor<StringValue, StringValue> unaryMethod(final String service, final String method)
    {
        return MethodDescriptor.<StringValue, StringValue>newBuilder().type(MethodDescriptor.MethodType.UNARY)
            .fullMethodName(MethodDescriptor.generateFullMethodName(service, method))
            .requestMarshaller(ProtoMarshaller.of(StringValue.getDefaultInstance()))
            .responseMarshaller(ProtoMarshaller.of(StringValue.getDefaultInstance()))
            .build();
    }

    /**
     * @param prefix what the name starts with.
     * @return a server name no other server of this JVM has ({@code inproc://} and it make the server's address).
     */
    static String newName(final String prefix)
    {
        return prefix + "-" + IDS.incrementAndGet();
    }

    /**
     * @param builder a server, built and started here.
     * @return the started server, shut down by {@link #closeAll}.
     */
    RpcServer start(final RpcServer.Builder builder)
    {
        final RpcServer server = builder.build().start();
        servers.add(server);
        return server;
    }

    /**
     * @return how many servers were started.
     */
    int size()
    {
        return servers.size();
    }

    /**
     * After a test: closes its channel, shuts every server down at once, checks that each terminated, then waits
     * until every inproc buffer is back.
     *
     * @param channel the test's channel, or null if it made none.
     * @throws Exception if closing the channel failed, or interrupted while waiting.
     */
    void closeAll(final AutoCloseable channel) throws Exception
    {
        if (channel != null)
        {
            channel.close();
        }
        for (final RpcServer server : servers)
        {
            server.shutdown(Duration.ZERO);
            assertThat(server.awaitTermination(TIMEOUT)).isTrue();
        }
        Await.until("every inproc buffer back", TIMEOUT, () ->
            Transports.providerFor(URI.create("inproc://x")).resourceUsage().buffersInUse() == 0);
    }
}
