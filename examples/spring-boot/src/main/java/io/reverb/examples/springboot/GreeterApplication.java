package io.reverb.examples.springboot;

import io.reverb.spring.boot.health.ReverbHealthIndicator;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.ApplicationRunner;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.SpringBootVersion;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.core.env.Environment;

/**
 * A Spring Boot application with Reverb, in one of three modes ({@code greeter.mode}):
 *
 * <ul>
 *   <li>{@code demo} (default): serves {@link GreeterService} and calls it through {@link GreeterClient}, prints the
 *   reply and Actuator's view of Reverb's health, then shuts down gracefully;</li>
 *   <li>{@code server} ({@code --spring.profiles.active=server}): serves until stopped (Ctrl-C: graceful shutdown);</li>
 *   <li>{@code client} ({@code --spring.profiles.active=client}): calls a server started in server mode, and exits.</li>
 * </ul>
 *
 * Run it with {@code examples/spring-boot/run.sh} on Spring Boot 4, or {@code examples/spring-boot3/run.sh} on Spring
 * Boot 3.5 (the same sources, built against the other starter); arguments are passed on, e.g.
 * {@code --reverb.server.address=tcp://0.0.0.0:9090}.
 */
@SpringBootApplication
public class GreeterApplication
{
    /**
     * @param args Spring Boot arguments.
     */
    public static void main(final String[] args)
    {
        final ConfigurableApplicationContext context = SpringApplication.run(GreeterApplication.class, args);
        if (!"server".equals(context.getEnvironment().getProperty("greeter.mode")))
        {
            System.exit(SpringApplication.exit(context)); // closing the context shuts the server down gracefully
        }
    }

    /**
     * In demo and client mode: one call, and Actuator's view of Reverb's health.
     *
     * @param client      the caller (absent in server mode).
     * @param health      Reverb's Actuator health indicator.
     * @param environment for the name to greet.
     * @return the runner.
     */
    @Bean
    ApplicationRunner greetOnce(
        final ObjectProvider<GreeterClient> client, final ObjectProvider<ReverbHealthIndicator> health,
        final Environment environment)
    {
        return args -> client.ifAvailable(greeter ->
        {
            System.out.println("reply:  " + greeter.greet(environment.getProperty("greeter.name", "Spring")).block() +
                " (Spring Boot " + SpringBootVersion.getVersion() + ")");
            health.ifAvailable(indicator ->
            {
                // var: Actuator's Health type is in another package on Boot 3.5 than on 4, and this source is both
                // examples' (examples/spring-boot3 compiles it against Boot 3.5)
                final var report = indicator.health();
                System.out.println("health: " + report.getStatus() + " " + report.getDetails());
            });
        });
    }
}
