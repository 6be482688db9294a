package io.reverb.services.health;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.reverb.rpc.RpcChannel;
import io.reverb.rpc.RpcException;
import io.reverb.rpc.RpcServer;
import io.reverb.rpc.StatusCode;
import io.reverb.rpc.transport.ResourceUsage;
import io.reverb.rpc.transport.Transports;
import io.reverb.services.health.HealthCheckResponse.ServingStatus;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import reactor.test.StepVerifier;

/**
 * The health service over {@code inproc://}: Check, Watch, status changes, terminal state.
 */
class HealthStatusManagerTest
{
    private static final AtomicInteger IDS = new AtomicInteger();
    private static final Duration TIMEOUT = Duration.ofSeconds(20);
    private static final String GREETER = "reverb.examples.Greeter";

    private final HealthStatusManager health = new HealthStatusManager();
    private String uri;
    private RpcServer server;
    private RpcChannel channel;
    private HealthRpc.HealthReactorStub stub;

    @BeforeEach
    void start()
    {
        uri = "inproc://health-" + IDS.incrementAndGet();
        server = RpcServer.builder(uri).addService(health.healthService()).build().start();
        channel = RpcChannel.builder(uri).build();
        stub = HealthRpc.newReactorStub(channel);
    }

    @AfterEach
    void stop() throws InterruptedException
    {
        channel.close();
        server.shutdown();
        assertThat(server.awaitTermination(TIMEOUT)).isTrue();
        // a call's last buffer may come back a moment after the call completed (on the thread that delivered it):
        // wait for it, as the shared transport suite does, and fail only if it never comes back
        final ResourceUsage usage = Transports.providerFor(Transports.parse(uri)).resourceUsage();
        final long deadline = System.nanoTime() + TIMEOUT.toNanos();
        while (usage.buffersInUse() != 0 && System.nanoTime() - deadline < 0)
        {
            Thread.sleep(5);
        }
        assertThat(usage.buffersInUse()).as("every buffer back: " + usage.describe()).isZero();
    }

    private static HealthCheckRequest request(final String service)
    {
        return HealthCheckRequest.newBuilder().setService(service).build();
    }

    @Test
    void shouldReportTheWholeServerServingFromTheStart()
    {
        assertThat(stub.check(request("")).block(TIMEOUT).getStatus()).isEqualTo(ServingStatus.SERVING);
    }

    @Test
    void shouldAnswerNotFoundForAnUnknownService()
    {
        assertThatThrownBy(() -> stub.check(request("no.such.Service")).block(TIMEOUT))
            .isInstanceOfSatisfying(RpcException.class, e ->
            {
                assertThat(e.status().code()).isEqualTo(StatusCode.NOT_FOUND);
                assertThat(e.status().description()).contains("no.such.Service");
            });
    }

    @Test
    void shouldCheckTheStatusLastSet()
    {
        health.setStatus(GREETER, ServingStatus.SERVING);
        assertThat(stub.check(request(GREETER)).block(TIMEOUT).getStatus()).isEqualTo(ServingStatus.SERVING);
        health.setStatus(GREETER, ServingStatus.NOT_SERVING);
        assertThat(stub.check(request(GREETER)).block(TIMEOUT).getStatus()).isEqualTo(ServingStatus.NOT_SERVING);
        health.clearStatus(GREETER);
        assertThatThrownBy(() -> stub.check(request(GREETER)).block(TIMEOUT)).isInstanceOf(RpcException.class);
    }

    @Test
    void shouldStreamTheCurrentStatusThenEachChangeOnce()
    {
        health.setStatus(GREETER, ServingStatus.SERVING);
        StepVerifier.create(stub.watch(request(GREETER)).map(HealthCheckResponse::getStatus))
            .expectNext(ServingStatus.SERVING)
            .then(() -> health.setStatus(GREETER, ServingStatus.SERVING)) // no change: nothing sent
            .then(() -> health.setStatus(GREETER, ServingStatus.NOT_SERVING))
            .expectNext(ServingStatus.NOT_SERVING)
            .then(() -> health.clearStatus(GREETER))
            .expectNext(ServingStatus.SERVICE_UNKNOWN)
            .then(() -> health.setStatus(GREETER, ServingStatus.SERVING))
            .expectNext(ServingStatus.SERVING)
            .thenCancel()
            .verify(TIMEOUT);
    }

    @Test
    void shouldStreamServiceUnknownUntilTheServiceIsSet()
    {
        StepVerifier.create(stub.watch(request("later.Service")).map(HealthCheckResponse::getStatus))
            .expectNext(ServingStatus.SERVICE_UNKNOWN)
            .then(() -> health.setStatus("later.Service", ServingStatus.SERVING))
            .expectNext(ServingStatus.SERVING)
            .thenCancel()
            .verify(TIMEOUT);
    }

    @Test
    void shouldReportEverythingNotServingForGoodInTerminalState()
    {
        health.setStatus(GREETER, ServingStatus.SERVING);
        StepVerifier.create(stub.watch(request("")).map(HealthCheckResponse::getStatus))
            .expectNext(ServingStatus.SERVING)
            .then(health::enterTerminalState)
            .expectNext(ServingStatus.NOT_SERVING)
            .thenCancel()
            .verify(TIMEOUT);
        health.setStatus(GREETER, ServingStatus.SERVING); // ignored now
        assertThat(stub.check(request(GREETER)).block(TIMEOUT).getStatus()).isEqualTo(ServingStatus.NOT_SERVING);
    }

    @Test
    void shouldRefuseToSetServiceUnknown()
    {
        assertThatThrownBy(() -> health.setStatus(GREETER, ServingStatus.SERVICE_UNKNOWN))
            .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("clearStatus");
    }

    @Test
    void shouldBoundTheNumberOfServicesWatched()
    {
        for (int i = 0; i < HealthStatusManager.MAX_SERVICES - 1; i++)
        {
            health.setStatus("s" + i, ServingStatus.SERVING);
        }
        StepVerifier.create(stub.watch(request("one.too.many")))
            .expectErrorSatisfies(t -> assertThat(((RpcException)t).status().code()).isEqualTo(StatusCode.RESOURCE_EXHAUSTED))
            .verify(TIMEOUT);
    }
}
