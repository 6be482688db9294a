package io.reverb.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;
import org.springframework.boot.SpringBootVersion;
import org.springframework.grpc.client.GrpcChannelFactory;

/**
 * The shared tests (reverb-spring-boot-core's src/sharedTest) run here on the Spring Boot line this starter is for, with
 * that line's Spring gRPC: a Boot BOM leaking in from the Boot 3.5 starter (reverb-spring-boot3-starter) would fail here.
 */
class SpringBootLineTest
{
    @Test
    void shouldRunOnItsOwnSpringBootLine()
    {
        assertThat(SpringBootVersion.getVersion()).startsWith("4.0.");
        assertThat(GrpcChannelFactory.class.getPackage().getImplementationVersion()).startsWith("1.0.");
    }
}
