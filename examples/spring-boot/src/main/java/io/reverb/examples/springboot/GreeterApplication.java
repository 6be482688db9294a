package io.reverb.examples.springboot;

import io.reverb.spring.boot.health.ReverbHealthIndicator;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.SpringBootVersion;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.context.ConfigurableApplicationContext;

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
            // once run() returned the application is ready (accepting traffic): Reverb's health says UP from here
            context.getBean(GreeterApplication.class).greetOnce(context);
            System.exit(SpringApplication.exit(context)); // closing the context shuts the server down gracefully
        }
    }

    /**
     * In demo and client mode: one call, and Actuator's view of Reverb's health.
     *
     * @param context the running application.
     */
    void greetOnce(final ConfigurableApplicationContext context)
    {
        context.getBeanProvider(GreeterClient.class).ifAvailable(greeter ->
        {
            final String name = context.getEnvironment().getProperty("greeter.name", "Spring");
            System.out.println("reply:  " + greeter.greet(name).block() + " (Spring Boot " +
                SpringBootVersion.getVersion() + ")");
            context.getBeanProvider(ReverbHealthIndicator.class).ifAvailable(indicator ->
            {
                // var: Actuator's Health type is in another package on Boot 3.5 than on 4, and this source is both
                // examples' (examples/spring-boot3 compiles it against Boot 3.5)
                final var report = indicator.health();
                System.out.println("health: " + report.getStatus() + " " + report.getDetails());
            });
        });
    }
}
