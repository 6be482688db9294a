package io.reverb.rpc.resolver;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.reverb.rpc.Status;
import io.reverb.rpc.StatusCode;
import java.net.InetAddress;
import java.net.URI;
import java.net.UnknownHostException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;
import reactor.test.scheduler.VirtualTimeScheduler;

class DnsNameResolverTest
{
    private final VirtualTimeScheduler time = VirtualTimeScheduler.create();
    private final NameResolver.Args args = new NameResolver.Args(time, Duration.ofSeconds(30), Duration.ofSeconds(1));
    private final AtomicInteger lookups = new AtomicInteger();
    private volatile String[] records = {"10.0.0.1", "10.0.0.2"};
    private final DnsNameResolver.HostLookup lookup = host ->
    {
        lookups.incrementAndGet();
        final String[] now = records;
        if (now == null)
        {
            throw new UnknownHostException(host + ": no such host");
        }
        final InetAddress[] found = new InetAddress[now.length];
        for (int i = 0; i < now.length; i++)
        {
            found[i] = InetAddress.getByAddress(host, InetAddress.getByName(now[i]).getAddress());
        }
        return found;
    };
    private final List<List<URI>> results = new ArrayList<>();
    private final List<Status> errors = new ArrayList<>();
    private final NameResolver.Listener listener = new NameResolver.Listener()
    {
        @Override
        public void onAddresses(final List<URI> addresses)
        {
            results.add(addresses);
        }

        @Override
        public void onError(final Status error)
        {
            errors.add(error);
        }
    };

    @AfterEach
    void tearDown()
    {
        time.dispose();
    }

    @Test
    void shouldNotLookUpOnTheThreadThatStartsIt() throws Exception
    {
        // RpcChannel.Builder.build() starts the resolver: a DNS server that takes seconds must not hold it
        final CountDownLatch answer = new CountDownLatch(1);
        final DnsNameResolver.HostLookup slow = host ->
        {
            try
            {
                answer.await();
            }
            catch (final InterruptedException e)
            {
                Thread.currentThread().interrupt();
            }
            return lookup.lookup(host);
        };
        final Scheduler real = Schedulers.newSingle("dns-test");
        final CompletableFuture<List<URI>> resolved = new CompletableFuture<>();
        final DnsNameResolver resolver = new DnsNameResolver(URI.create("dns:///replicas.internal:7000"),
            new NameResolver.Args(real, Duration.ofSeconds(30), Duration.ofSeconds(1)), slow);
        try
        {
            resolver.start(new NameResolver.Listener()
            {
                @Override
                public void onAddresses(final List<URI> addresses)
                {
                    resolved.complete(addresses);
                }

                @Override
                public void onError(final Status error)
                {
                    resolved.completeExceptionally(error.asException());
                }
            });
            assertThat(resolved).as("start returned before the lookup answered").isNotDone();
            answer.countDown();
            assertThat(resolved.get(10, TimeUnit.SECONDS)).hasSize(2);
        }
        finally
        {
            answer.countDown();
            resolver.shutdown();
            real.dispose();
        }
    }

    @Test
    void shouldResolveEveryRecordToATcpAddressByDefault()
    {
        final DnsNameResolver resolver = new DnsNameResolver(URI.create("dns:///replicas.internal:7000"), args, lookup);
        resolver.start(listener);

        assertThat(results).hasSize(1);
        assertThat(results.get(0)).map(URI::toString).containsExactly("tcp://10.0.0.1:7000", "tcp://10.0.0.2:7000");
        resolver.shutdown();
    }

    @Test
    void shouldPickTheSchemeFromTheTransportParameterAndCopyOtherParameters()
    {
        records = new String[] {"10.0.0.1", "::1"};
        final DnsNameResolver resolver = new DnsNameResolver(
            URI.create("dns://8.8.8.8/replicas.internal:7000?transport=rdma&pollingMode=BUSY"), args, lookup);
        resolver.start(listener);

        assertThat(results.get(0)).map(URI::toString)
            .containsExactly("rdma://10.0.0.1:7000?pollingMode=BUSY", "rdma://[0:0:0:0:0:0:0:1]:7000?pollingMode=BUSY");
        resolver.shutdown();
    }

    @Test
    void shouldResolveToReverbAddressesWhenAskedForTheBestFabric()
    {
        records = new String[] {"10.0.0.1"};
        final DnsNameResolver resolver = new DnsNameResolver(
            URI.create("dns:///replicas.internal:7000?transport=reverb"), args, lookup);
        resolver.start(listener);

        assertThat(results.get(0)).map(URI::toString).containsExactly("reverb://10.0.0.1:7000");
        resolver.shutdown();
    }

    @Test
    void shouldRejectMalformedTargetsSayingWhatIsExpected()
    {
        assertThatThrownBy(() -> new DnsNameResolver(URI.create("dns:///replicas.internal"), args, lookup))
            .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("host:port");
        assertThatThrownBy(() -> new DnsNameResolver(URI.create("dns:///h:1?transport=shm"), args, lookup))
            .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("tcp, rdma or reverb");
    }

    @Test
    void shouldReResolvePeriodically()
    {
        final DnsNameResolver resolver = new DnsNameResolver(URI.create("dns:///replicas.internal:7000"), args, lookup);
        resolver.start(listener);
        records = new String[] {"10.0.0.2", "10.0.0.3"};

        time.advanceTimeBy(Duration.ofSeconds(29));
        assertThat(results).hasSize(1);
        time.advanceTimeBy(Duration.ofSeconds(1));
        assertThat(results).hasSize(2);
        assertThat(results.get(1)).map(URI::toString).containsExactly("tcp://10.0.0.2:7000", "tcp://10.0.0.3:7000");
        resolver.shutdown();
    }

    @Test
    void shouldReResolveOnRefreshNoSoonerThanTheMinimumIntervalAndCoalesceRequests()
    {
        final DnsNameResolver resolver = new DnsNameResolver(URI.create("dns:///replicas.internal:7000"), args, lookup);
        resolver.start(listener);
        assertThat(lookups.get()).isEqualTo(1);

        resolver.refresh(); // a connection failed right after the first resolution
        resolver.refresh();
        resolver.refresh();
        time.advanceTimeBy(Duration.ofMillis(999));
        assertThat(lookups.get()).isEqualTo(1);
        time.advanceTimeBy(Duration.ofMillis(1));
        assertThat(lookups.get()).isEqualTo(2);

        time.advanceTimeBy(Duration.ofSeconds(5));
        resolver.refresh(); // long after: at once
        assertThat(lookups.get()).isEqualTo(3);
        resolver.shutdown();
    }

    @Test
    void shouldReportFailuresAndRetryWithADoublingDelayUntilTheHostResolves()
    {
        records = null;
        final DnsNameResolver resolver = new DnsNameResolver(URI.create("dns:///replicas.internal:7000"), args, lookup);
        resolver.start(listener);
        assertThat(errors).hasSize(1);
        assertThat(errors.get(0).code()).isEqualTo(StatusCode.UNAVAILABLE);
        assertThat(errors.get(0).description()).contains("replicas.internal");

        time.advanceTimeBy(Duration.ofSeconds(1)); // retry after 1 s
        assertThat(errors).hasSize(2);
        time.advanceTimeBy(Duration.ofMillis(1999)); // then after 2 s
        assertThat(errors).hasSize(2);
        records = new String[] {"10.0.0.9"};
        time.advanceTimeBy(Duration.ofMillis(1));
        assertThat(errors).hasSize(2);
        assertThat(results).hasSize(1);
        assertThat(results.get(0)).map(URI::toString).containsExactly("tcp://10.0.0.9:7000");
        resolver.shutdown();
    }

    @Test
    void shouldDeliverNothingAfterShutdown()
    {
        final DnsNameResolver resolver = new DnsNameResolver(URI.create("dns:///replicas.internal:7000"), args, lookup);
        resolver.start(listener);
        resolver.shutdown();
        resolver.refresh();
        time.advanceTimeBy(Duration.ofMinutes(5));
        assertThat(results).hasSize(1);
        assertThat(lookups.get()).isEqualTo(1);
    }
}
