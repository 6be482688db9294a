package io.reverb.rpc;

import static org.assertj.core.api.Assertions.assertThat;

import io.reverb.common.PackageGraph;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Collectors;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * rpc-core's packages form no cycle, and the API package imports no implementation package (grpc-java's rule for
 * {@code io.grpc} and {@code io.grpc.internal}): jdeps' package graph of rpc-core's classes ({@link PackageGraph}).
 */
class PackageCyclesTest
{
    private static PackageGraph graph;

    @BeforeAll
    static void readClasses() throws Exception
    {
        graph = PackageGraph.of(Path.of(RpcChannel.class.getProtectionDomain().getCodeSource().getLocation().toURI()));
        // the graph is rpc-core's, not an empty one: the implementation uses the API
        assertThat(graph.dependenciesOf("io.reverb.rpc.internal")).contains("io.reverb.rpc", "io.reverb.rpc.wire");
        assertThat(graph.packages()).contains("io.reverb.rpc", "io.reverb.rpc.lb", "io.reverb.rpc.impl");
    }

    @Test
    void shouldHaveNoPackageCycle()
    {
        assertThat(graph.cycles()).as(graph.toString()).isEmpty();
    }

    @Test
    void shouldKeepTheApiPackageFreeOfTheImplementation()
    {
        // the API package may use the transport SPI (TransportOptions in the builders) and the codec SPI (codecs and
        // their registry in the builders and call options), and nothing else of rpc-core
        final List<String> uses = graph.uses("io.reverb.rpc", "io.reverb.rpc").stream()
            .filter(use -> use.startsWith("io.reverb.rpc -> "))
            .filter(use -> !use.equals("io.reverb.rpc -> io.reverb.rpc"))
            .filter(use -> !use.startsWith("io.reverb.rpc -> io.reverb.rpc.transport"))
            .filter(use -> !use.equals("io.reverb.rpc -> io.reverb.rpc.compression"))
            .collect(Collectors.toList());
        assertThat(uses).isEmpty();
        // and the codec SPI stands alone: no rpc-core package behind it
        assertThat(graph.uses("io.reverb.rpc.compression", "io.reverb.rpc").stream()
            .filter(use -> !use.equals("io.reverb.rpc.compression -> io.reverb.rpc.compression"))
            .collect(Collectors.toList())).isEmpty();
    }

    @Test
    void shouldKeepTheConnectionAndCallRuntimeBelowTheBalancer()
    {
        // internal (connections, calls, the server runtime) knows nothing of load balancing, resolvers or the wiring
        assertThat(graph.uses("io.reverb.rpc.internal", "io.reverb.rpc.lb", "io.reverb.rpc.resolver",
            "io.reverb.rpc.health", "io.reverb.rpc.impl")).isEmpty();
    }
}
