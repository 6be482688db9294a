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
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import reactor.core.Disposable;
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
    void shouldBoundTheNamesWithoutAStatusWatchedAtOnceAndForgetEachWithItsLastWatch()
    {
        // A client watching made-up names holds each only while it watches: never the server's own statuses.
        final List<Disposable> watches = new ArrayList<>();
        final List<ServingStatus> seen = new CopyOnWriteArrayList<>();
        for (int i = 0; i < HealthStatusManager.MAX_SERVICES; i++)
        {
            watches.add(health.healthService().watch(request("made.up." + i))
                .subscribe(r -> seen.add(r.getStatus()), e -> seen.add(null)));
        }
        assertThat(seen).hasSize(HealthStatusManager.MAX_SERVICES).containsOnly(ServingStatus.SERVICE_UNKNOWN);
        StepVerifier.create(stub.watch(request("one.too.many")))
            .expectErrorSatisfies(t -> assertThat(((RpcException)t).status().code()).isEqualTo(StatusCode.RESOURCE_EXHAUSTED))
            .verify(TIMEOUT);
        // the server still sets statuses, and a name with a status may still be watched
        health.setStatus(GREETER, ServingStatus.SERVING);
        StepVerifier.create(stub.watch(request(GREETER)).map(HealthCheckResponse::getStatus))
            .expectNext(ServingStatus.SERVING)
            .thenCancel()
            .verify(TIMEOUT);
        // a watched name that gets a status leaves room for another made-up one
        health.setStatus("made.up.0", ServingStatus.NOT_SERVING);
        StepVerifier.create(stub.watch(request("fits.now")).map(HealthCheckResponse::getStatus))
            .expectNext(ServingStatus.SERVICE_UNKNOWN)
            .thenCancel()
            .verify(TIMEOUT);

        watches.forEach(Disposable::dispose);
        // every made-up name went with its watch: as many can be watched again
        final List<Disposable> again = new ArrayList<>();
        final List<Object> seenAgain = new CopyOnWriteArrayList<>();
        for (int i = 0; i < HealthStatusManager.MAX_SERVICES; i++)
        {
            again.add(health.healthService().watch(request("made.up.again." + i))
                .subscribe(r -> seenAgain.add(r.getStatus()), seenAgain::add));
        }
        assertThat(seenAgain).hasSize(HealthStatusManager.MAX_SERVICES).containsOnly(ServingStatus.SERVICE_UNKNOWN);
        StepVerifier.create(stub.watch(request("one.too.many")))
            .expectError(RpcException.class)
            .verify(TIMEOUT);
        again.forEach(Disposable::dispose);
    }

    @Test
    void shouldBoundTheServicesWithAStatus()
    {
        for (int i = 0; i < HealthStatusManager.MAX_SERVICES - 1; i++)
        {
            health.setStatus("s" + i, ServingStatus.SERVING); // with the whole server's, MAX_SERVICES
        }
        health.setStatus("s0", ServingStatus.NOT_SERVING); // a known one may change
        assertThatThrownBy(() -> health.setStatus("one.too.many", ServingStatus.SERVING))
            .isInstanceOf(IllegalStateException.class).hasMessageContaining(String.valueOf(HealthStatusManager.MAX_SERVICES));
        health.clearStatus("s1");
        health.setStatus("fits.now", ServingStatus.SERVING);
        assertThat(health.status("fits.now")).isEqualTo(ServingStatus.SERVING);
    }

    @Test
    void shouldServeAgainAfterLeavingTheTerminalState()
    {
        health.setStatus(GREETER, ServingStatus.SERVING);
        StepVerifier.create(stub.watch(request(GREETER)).map(HealthCheckResponse::getStatus))
            .expectNext(ServingStatus.SERVING)
            .then(health::enterTerminalState)
            .expectNext(ServingStatus.NOT_SERVING)
            .then(() -> health.setStatus(GREETER, ServingStatus.SERVING)) // ignored: terminal
            .then(health::leaveTerminalState)
            .then(() -> health.setStatus(GREETER, ServingStatus.SERVING))
            .expectNext(ServingStatus.SERVING)
            .thenCancel()
            .verify(TIMEOUT);
        assertThat(health.status(HealthStatusManager.SERVICE_NAME_ALL_SERVICES)).as("until set again")
            .isEqualTo(ServingStatus.NOT_SERVING);
    }
}
