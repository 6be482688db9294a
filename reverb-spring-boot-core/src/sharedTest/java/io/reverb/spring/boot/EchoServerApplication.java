package io.reverb.spring.boot;

import java.io.IOException;
import io.grpc.stub.StreamObserver;
import io.reverb.services.health.HealthCheckRequest;
import io.reverb.services.health.HealthCheckResponse.ServingStatus;
import io.reverb.services.health.HealthStatusManager;
import io.reverb.spring.boot.test.EchoReply;
import io.reverb.spring.boot.test.EchoRequest;
import io.reverb.spring.boot.test.GrpcEchoGrpc;
import io.reverb.spring.boot.test.NativeEchoRpc;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;

/**
 * The server side of the two-process tests: a Spring Boot application with a native service bean and a grpc-java
 * service bean, run in a child JVM. It tells the test on stdout: {@code REVERB-ADDRESS <address>} once serving,
 * {@code SLOW-STARTED} when a Slow call arrives, {@code NOT-SERVING} when its health service turns NOT_SERVING
 * (shutdown began); a {@code release} line on stdin lets the Slow calls answer.
 */
@SpringBootConfiguration
@EnableAutoConfiguration
public class EchoServerApplication
{
    private final Sinks.Empty<Void> release = Sinks.empty();

    /**
     * @param args Spring Boot arguments ({@code --reverb.server.address=...}).
     */
    public static void main(final String[] args)
    {
        final ConfigurableApplicationContext context = SpringApplication.run(EchoServerApplication.class, args);
        final EchoServerApplication app = context.getBean(EchoServerApplication.class);
        context.getBean(HealthStatusManager.class).healthService()
            .watch(HealthCheckRequest.getDefaultInstance())
            .filter(r -> r.getStatus() == ServingStatus.NOT_SERVING)
            .next()
            .subscribe(r -> System.out.println("NOT-SERVING"));
        final Thread stdin = new Thread(() ->
        {
            try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8)))
            {
                String line;
                while ((line = in.readLine()) != null)
                {
                    if (line.equals("release"))
                    {
                        app.release.tryEmitEmpty();
                    }
                }
            }
            catch (final IOException e)
            {
                System.out.println("stdin: " + e);
            }
        }, "echo-server-stdin");
        stdin.setDaemon(true);
        stdin.start();
        System.out.println("REVERB-ADDRESS " + context.getBean(ReverbServerLifecycle.class).address());
    }

    /**
     * @return the native service.
     */
    @Bean
    NativeEchoRpc.NativeEchoImplBase nativeEcho()
    {
        return new NativeEchoRpc.NativeEchoImplBase()
        {
            @Override
            public Mono<EchoReply> echo(final EchoRequest request)
            {
                return Mono.just(EchoReply.newBuilder().setText("native:" + request.getText()).build());
            }

            @Override
            public Mono<EchoReply> slow(final EchoRequest request)
            {
                System.out.println("SLOW-STARTED");
                return release.asMono().then(Mono.fromSupplier(() ->
                    EchoReply.newBuilder().setText("slow:" + request.getText()).build()));
            }
        };
    }

    /**
     * @return the grpc-java service.
     */
    @Bean
    GrpcEchoGrpc.GrpcEchoImplBase grpcEcho()
    {
        return new GrpcEchoGrpc.GrpcEchoImplBase()
        {
            @Override
            public void echo(final EchoRequest request, final StreamObserver<EchoReply> responseObserver)
            {
                responseObserver.onNext(EchoReply.newBuilder().setText("grpc:" + request.getText()).build());
                responseObserver.onCompleted();
            }
        };
    }
}
