package io.reverb.rdma.provider.tcp;

import static org.assertj.core.api.Assertions.assertThat;

import io.reverb.rdma.verbs.AbstractVerbsProviderConformanceTest;
import io.reverb.rdma.verbs.VerbsProvider;

/**
 * The conformance suite against the tcp provider over loopback ({@code 127.0.0.1}, port 0 so every
 * listener gets a fresh port), with both contexts in this JVM; the suite's peer-death test runs its
 * peer in a child JVM. After every test, no NIC thread of a closed context is left running.
 */
class TcpConformanceTest extends AbstractVerbsProviderConformanceTest
{
    @Override
    protected VerbsProvider provider()
    {
        return new TcpVerbsProvider();
    }

    @Override
    protected String newAddress()
    {
        return "127.0.0.1:0";
    }

    @Override
    protected void assertNothingLeaked()
    {
        assertThat(Thread.getAllStackTraces().keySet().stream()
            .filter(t -> t.getName().startsWith("reverb-tcp-nic-") && t.isAlive())
            .map(Thread::getName)
            .toArray(String[]::new))
            .as("NIC threads of closed contexts").isEmpty();
    }

}
