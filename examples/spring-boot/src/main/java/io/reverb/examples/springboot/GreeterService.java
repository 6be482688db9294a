package io.reverb.examples.springboot;

import org.springframework.stereotype.Service;
import reactor.core.publisher.Mono;

/**
 * The service: an ordinary bean. The starter serves every such bean on {@code reverb.server.address}.
 */
@Service
public class GreeterService extends GreeterRpc.GreeterImplBase
{
    @Override
    public Mono<HelloReply> sayHello(final HelloRequest request)
    {
        return Mono.just(HelloReply.newBuilder().setMessage("Hello, " + request.getName()).build());
    }
}
