package io.reverb.rdma.provider.disni;

import static org.assertj.core.api.Assertions.assertThat;

import io.reverb.common.PackageGraph;
import java.net.URISyntaxException;
import java.nio.file.Path;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * reverb-transport-rdma's packages as jdeps sees them in the bytecode of its main classes: no package cycle, neither
 * Reactor nor protobuf nor rpc-core, and DiSNi is used (this artifact is where it lives).
 */
class DisniPackageGraphTest
{
    private static PackageGraph graph;

    @BeforeAll
    static void readTheMainClasses() throws URISyntaxException
    {
        // target/classes when Maven runs this module's tests, or the artifact's jar.
        graph = PackageGraph.of(Path.of(DisniVerbsProvider.class.getProtectionDomain().getCodeSource().getLocation().toURI()));
    }

    @Test
    void shouldSeeTheProviderUseDisniAndTheVerbsSpi()
    {
        assertThat(graph.packages()).contains("io.reverb.rdma.provider.disni");
        assertThat(graph.dependenciesOf("io.reverb.rdma.provider.disni"))
            .contains("com.ibm.disni.verbs", "io.reverb.rdma.verbs", "io.reverb.rdma.provider.base");
    }

    @Test
    void shouldHaveNoPackageCycle()
    {
        assertThat(graph.cycles()).isEmpty();
    }

    @Test
    void shouldKeepReactorProtobufAndRpcCoreOut()
    {
        assertThat(graph.uses("io.reverb.rdma", "reactor", "org.reactivestreams", "com.google.protobuf", "io.reverb.rpc"))
            .isEmpty();
    }
}
