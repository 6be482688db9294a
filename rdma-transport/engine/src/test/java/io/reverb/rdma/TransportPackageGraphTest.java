package io.reverb.rdma;

import static org.assertj.core.api.Assertions.assertThat;

import io.reverb.common.PackageGraph;
import io.reverb.rdma.engine.RdmaEngine;
import java.net.URISyntaxException;
import java.nio.file.Path;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * reverb-transport's packages as jdeps sees them in the bytecode of its main classes: no package cycle, the engine,
 * the verbs SPI and the providers reach neither Reactor nor protobuf nor rpc-core (only the rpc adapter uses
 * rpc-core), the layers point one way (rpc adapter, then engine, then providers, then verbs), and nothing of
 * DiSNi is used (that is reverb-transport-rdma's).
 */
class TransportPackageGraphTest
{
    private static final String[] REACTOR_AND_PROTOBUF = {"reactor", "org.reactivestreams", "com.google.protobuf"};

    private static PackageGraph graph;

    @BeforeAll
    static void readTheMainClasses() throws URISyntaxException
    {
        // target/classes when Maven runs this module's tests, or the artifact's jar: either way what users get.
        graph = PackageGraph.of(Path.of(RdmaEngine.class.getProtectionDomain().getCodeSource().getLocation().toURI()));
    }

    @Test
    void shouldSeeTheArtifactsPackagesAndWhatTheyUse()
    {
        // The graph is the one checked below, not an empty one: its packages and a few uses that must be there.
        assertThat(graph.packages()).contains("io.reverb.rdma.engine", "io.reverb.rdma.verbs", "io.reverb.rdma.rpc",
            "io.reverb.rdma.provider.base", "io.reverb.rdma.provider.handshake", "io.reverb.rdma.provider.shm",
            "io.reverb.rdma.provider.tcp");
        assertThat(graph.dependenciesOf("io.reverb.rdma.rpc")).contains("io.reverb.rpc.transport", "io.reverb.rdma.engine");
        assertThat(graph.dependenciesOf("io.reverb.rdma.engine")).contains("io.reverb.rdma.verbs", "io.reverb.common");
    }

    @Test
    void shouldHaveNoPackageCycle()
    {
        assertThat(graph.cycles()).isEmpty();
    }

    @Test
    void shouldKeepReactorProtobufAndRpcCoreOutOfTheEngineTheVerbsAndTheProviders()
    {
        for (final String pkg : new String[] {"io.reverb.rdma.engine", "io.reverb.rdma.verbs", "io.reverb.rdma.provider"})
        {
            assertThat(graph.uses(pkg, REACTOR_AND_PROTOBUF)).as(pkg).isEmpty();
            assertThat(graph.uses(pkg, "io.reverb.rpc")).as(pkg).isEmpty();
        }
    }

    @Test
    void shouldLayerRpcAdapterOverEngineOverProvidersOverVerbs()
    {
        assertThat(graph.uses("io.reverb.rdma.verbs", "io.reverb.rdma.engine", "io.reverb.rdma.provider",
            "io.reverb.rdma.rpc")).isEmpty();
        assertThat(graph.uses("io.reverb.rdma.provider", "io.reverb.rdma.engine", "io.reverb.rdma.rpc")).isEmpty();
        assertThat(graph.uses("io.reverb.rdma.engine", "io.reverb.rdma.provider", "io.reverb.rdma.rpc")).isEmpty();
    }

    @Test
    void shouldUseNothingOfDisni()
    {
        assertThat(graph.uses("io.reverb", "com.ibm.disni", "io.reverb.rdma.provider.disni")).isEmpty();
    }
}
