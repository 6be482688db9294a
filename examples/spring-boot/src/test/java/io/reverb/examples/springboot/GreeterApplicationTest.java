package io.reverb.examples.springboot;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * The example's demo mode as {@code run.sh} starts it (its application.properties), on an address of its own: the
 * injected stub reaches the service bean.
 */
class GreeterApplicationTest
{
    @Test
    void shouldGreetThroughTheInjectedStub()
    {
        final String address = "shm://reverb-spring-example-" + ProcessHandle.current().pid();
        try (ConfigurableApplicationContext context = new SpringApplicationBuilder(GreeterApplication.class)
            .web(WebApplicationType.NONE)
            .run("--reverb.server.address=" + address, "--reverb.client.channels.greeter.address=" + address,
                "--greeter.name=test"))
        {
            assertThat(context.getBean(GreeterClient.class).greet("Reverb").block()).isEqualTo("Hello, Reverb");
        }
    }
}
