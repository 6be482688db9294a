package io.reverb.rpc.observation;

import com.google.protobuf.ByteString;
import com.google.protobuf.BytesValue;
import io.micrometer.core.instrument.observation.DefaultMeterObservationHandler;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.micrometer.observation.ObservationRegistry;
import io.reverb.rpc.CallOptions;
import io.reverb.rpc.ClientCallContext;
import io.reverb.rpc.ClientInterceptor;
import io.reverb.rpc.RpcContext;
import io.reverb.rpc.ServerCallHandler;
import io.reverb.rpc.ServerInterceptor;
import io.reverb.rpc.measure.UnaryAllocationProbe;
import io.reverb.rpc.RpcChannel;
import io.reverb.rpc.RpcServer;
import io.reverb.rpc.stub.ClientCalls;
import java.time.Duration;
import org.reactivestreams.Publisher;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * Measures bytes allocated (all live threads) and time per unary 64-byte call over {@code inproc://} with the
 * observation interceptors absent, replaced by interceptors that do nothing, present with
 * {@link ObservationRegistry#NOOP}, and present with a registry that records timers. Not a test: run with
 * {@code java -cp <rpc-core test class path> io.reverb.rpc.observation.ObservationAllocationProbe [calls]}.
 */
public final class ObservationAllocationProbe
{
    private ObservationAllocationProbe()
    {
    }

    public static void main(final String[] args) throws Exception
    {
        final int calls = args.length > 0 ? Integer.parseInt(args[0]) : 200_000;
        final ObservationRegistry meters = ObservationRegistry.create();
        meters.observationConfig().observationHandler(new DefaultMeterObservationHandler(new SimpleMeterRegistry()));
        for (int round = 0; round < 3; round++)
        {
            run("none", null, calls);
            run("passthrough", null, calls);
            run("noop", ObservationRegistry.NOOP, calls);
            run("timers", meters, calls);
        }
    }

    private static void run(final String name, final ObservationRegistry observations, final int calls) throws Exception
    {
        final String uri = "inproc://observation-probe-" + name;
        final RpcServer.Builder serverBuilder = RpcServer.builder(uri).addService(UnaryAllocationProbe.pingService());
        final RpcChannel.Builder channelBuilder = RpcChannel.builder(uri);
        if (name.equals("passthrough"))
        {
            // Interceptors that do nothing: what rpc-core's interceptor chain itself costs.
            serverBuilder.intercept(new ServerInterceptor()
            {
                @Override
                public <Q, R> Publisher<R> interceptCall(final RpcContext c, final Flux<Q> requests,
                    final ServerCallHandler<Q, R> next)
                {
                    return next.handle(requests);
                }
            });
            channelBuilder.intercept(new ClientInterceptor()
            {
                @Override
                public <Q, R> Flux<R> interceptCall(final ClientCallContext call, final Flux<Q> requests, final Next<Q, R> next)
                {
                    return next.call(requests);
                }
            });
        }
        if (observations != null)
        {
            serverBuilder.intercept(new ObservationServerInterceptor(observations));
            channelBuilder.intercept(new ObservationClientInterceptor(observations));
        }
        final BytesValue payload = BytesValue.of(ByteString.copyFrom(new byte[62]));
        try (RpcServer server = serverBuilder.build().start(); RpcChannel channel = channelBuilder.build())
        {
            UnaryAllocationProbe.measure(name, calls, () ->
                Mono.defer(() -> ClientCalls.unary(channel, UnaryAllocationProbe.PING, CallOptions.DEFAULT, payload))
                    .repeat(calls - 1).then().block(Duration.ofMinutes(5)));
        }
    }
}
