package io.reverb.rpc;

import com.google.protobuf.StringValue;
import io.reverb.rpc.stub.ClientCalls;
import java.time.Duration;

/**
 * Runs a server, a channel and a call; {@link MetricsTest} loads it in a class loader without micrometer.
 */
public final class NoMicrometerProbe
{
    private NoMicrometerProbe()
    {
    }

    /**
     * @return "pong" if the call worked.
     */
    public static String run()
    {
        try (RpcServer server = RpcServer.builder("inproc://no-micrometer").addService(new TestService()).build().start();
            RpcChannel channel = RpcChannel.builder("inproc://no-micrometer").build())
        {
            return ClientCalls.unary(channel, TestService.ECHO, CallOptions.DEFAULT, StringValue.of("pong"))
                .block(Duration.ofSeconds(20)).getValue();
        }
    }
}
