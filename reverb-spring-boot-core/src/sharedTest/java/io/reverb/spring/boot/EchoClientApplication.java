package io.reverb.spring.boot;

import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.annotation.Bean;

/**
 * The client side of the two-process tests: a Spring Boot application whose only bean of its own has
 * {@link ReverbClient} fields.
 */
@SpringBootConfiguration
@EnableAutoConfiguration
public class EchoClientApplication
{
    /**
     * @return the bean with the stubs.
     */
    @Bean
    EchoClients echoClients()
    {
        return new EchoClients();
    }
}
