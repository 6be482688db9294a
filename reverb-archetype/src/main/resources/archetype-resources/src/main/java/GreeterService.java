package ${package};

import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * The server side of {@code Greeter}: extends the base class generated from {@code src/main/proto/greeter.proto}.
 *
 * <p>Handlers return a {@link Mono} (one reply) or a {@link Flux} (a stream of replies) and must not block:
 * by default they run on the transport's poller thread, which serves every call of the connection.
 */
public final class GreeterService extends GreeterRpc.GreeterImplBase
{
    @Override
    public Mono<HelloReply> sayHello(final HelloRequest request)
    {
        return Mono.just(reply("Hello, " + request.getName() + "!"));
    }

    @Override
    public Flux<HelloReply> sayHelloRepeatedly(final RepeatedHelloRequest request)
    {
        return Flux.range(1, request.getTimes())
            .map(i -> reply("Hello #" + i + ", " + request.getName() + "!"));
    }

    private static HelloReply reply(final String message)
    {
        return HelloReply.newBuilder().setMessage(message).build();
    }
}
