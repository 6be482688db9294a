package io.reverb.rdma.rpc.failover;

import com.google.protobuf.Int32Value;
import com.google.protobuf.StringValue;
import io.reverb.rpc.MethodDescriptor;
import io.reverb.rpc.RpcServer;
import io.reverb.rpc.ServiceDefinition;
import io.reverb.rpc.health.HealthProtocol;
import io.reverb.rpc.protobuf.ProtoMarshaller;
import io.reverb.rpc.stub.ServerCalls;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;

/**
 * A replica in its own process for {@link AbstractFailoverTest}: answers its id on {@code Idem} and {@code NonIdem}
 * (after a short delay, so that calls are in flight when it is killed), serves the health Watch, prints
 * {@code READY}, and on {@code drain} from stdin reports NOT_SERVING, shuts down with a grace period and exits.
 */
public final class ReplicaMain
{
    static final String SERVICE = "reverb.test.Failover";
    static final MethodDescriptor<StringValue, Int32Value> IDEM = method("Idem");
    static final MethodDescriptor<StringValue, Int32Value> NON_IDEM = method("NonIdem");

    private ReplicaMain()
    {
    }

    static MethodDescriptor<StringValue, Int32Value> method(final String name)
    {
        return MethodDescriptor.<StringValue, Int32Value>newBuilder().type(MethodDescriptor.MethodType.UNARY)
            .fullMethodName(MethodDescriptor.generateFullMethodName(SERVICE, name))
            .requestMarshaller(ProtoMarshaller.of(StringValue.getDefaultInstance()))
            .responseMarshaller(ProtoMarshaller.of(Int32Value.getDefaultInstance()))
            .build();
    }

    /**
     * @param args uri, id.
     * @throws Exception on failure.
     */
    public static void main(final String[] args) throws Exception
    {
        final String uri = args[0];
        final Int32Value id = Int32Value.of(Integer.parseInt(args[1]));
        final Sinks.Many<Int32Value> health = Sinks.many().replay().latest();
        health.tryEmitNext(Int32Value.of(HealthProtocol.SERVING));
        final Duration work = Duration.ofMillis(2);
        final RpcServer server = RpcServer.builder(uri)
            .addService(ServiceDefinition.builder(SERVICE)
                .addMethod(IDEM, ServerCalls.unary(r -> Mono.delay(work).thenReturn(id)))
                .addMethod(NON_IDEM, ServerCalls.unary(r -> Mono.delay(work).thenReturn(id)))
                .build())
            .addService(ServiceDefinition.builder(HealthProtocol.SERVICE_NAME)
                .addMethod(HealthProtocol.WATCH, ServerCalls.serverStreaming(r -> health.asFlux())).build())
            .build().start();
        System.out.println("READY " + server.address());
        System.out.flush();
        final BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null)
        {
            if (line.equals("drain"))
            {
                health.tryEmitNext(Int32Value.of(HealthProtocol.NOT_SERVING));
                Thread.sleep(200); // clients stop picking it
                server.shutdown(Duration.ofSeconds(10));
                server.awaitTermination(Duration.ofSeconds(20));
                System.out.println("DRAINED");
                System.out.flush();
                System.exit(0);
            }
        }
        server.shutdown(Duration.ZERO);
        System.exit(0);
    }
}
