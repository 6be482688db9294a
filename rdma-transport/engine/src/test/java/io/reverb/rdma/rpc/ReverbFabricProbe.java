package io.reverb.rdma.rpc;

import com.google.protobuf.StringValue;
import io.reverb.rpc.CallOptions;
import io.reverb.rpc.RpcChannel;
import io.reverb.rpc.RpcServer;
import io.reverb.rpc.TestService;
import java.io.IOException;
import java.time.Duration;

/**
 * A child process of {@link ReverbNamespacesTest}: {@code server ADDRESS} serves {@link TestService} on
 * {@code reverb://ADDRESS:0}, prints {@code READY <port>} and serves until its standard input ends; {@code client URI}
 * makes one call over a channel to the URI and prints {@code FABRIC <fabric>}. The same client code runs wherever the
 * test places it.
 */
public final class ReverbFabricProbe
{
    private ReverbFabricProbe()
    {
    }

    /**
     * @param args {@code server ADDRESS} or {@code client URI}.
     * @throws IOException if standard input fails.
     */
    public static void main(final String[] args) throws IOException
    {
        if ("server".equals(args[0]))
        {
            final RpcServer server = RpcServer.builder("reverb://" + args[1] + ":0").addService(new TestService())
                .build().start();
            System.out.println("READY " + server.port());
            System.out.flush();
            while (System.in.read() >= 0)
            {
                // serve until the test closes our input
            }
            server.close();
            return;
        }
        final RpcChannel channel = RpcChannel.builder(args[1]).build();
        try
        {
            final StringValue answer = channel.newUnaryCall(TestService.ECHO, CallOptions.DEFAULT, StringValue.of("probe"))
                .block(Duration.ofSeconds(30));
            System.out.println("ECHO " + answer.getValue());
            System.out.println("FABRIC " + channel.fabric());
            System.out.flush();
        }
        finally
        {
            channel.close();
        }
    }
}
