package io.reverb.common;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

class PackageGraphTest
{
    private static final String OUTPUT = String.join("\n",
        "classes -> java.base",
        "   a.api                 -> a.impl                 classes",
        "   a.api                 -> java.lang              java.base",
        "   a.impl                -> a.api                  classes",
        "   a.impl                -> a.impl                 classes",
        "   a.impl                -> reactor.core           not found",
        "   a.wire                -> a.util                 classes",
        "   a.util                -> java.util              java.base",
        "   b.x                   -> b.y                    classes",
        "   b.y                   -> b.z                    classes",
        "   b.z                   -> b.x                    classes");

    @Test
    void findsEveryCycleAndNothingElse()
    {
        final List<Set<String>> cycles = PackageGraph.parse(OUTPUT).cycles();

        assertThat(cycles).containsExactlyInAnyOrder(Set.of("a.api", "a.impl"), Set.of("b.x", "b.y", "b.z"));
    }

    @Test
    void reportsForbiddenUsesWithTheirSource()
    {
        final PackageGraph graph = PackageGraph.parse(OUTPUT);

        assertThat(graph.uses("a", "reactor", "com.google.protobuf")).containsExactly("a.impl -> reactor.core");
        assertThat(graph.uses("a.wire", "reactor")).isEmpty();
        assertThat(graph.dependenciesOf("a.wire")).containsExactly("a.util");
    }

    @Test
    void thisModuleHasNoCycleAndNoDependencyButTheJdkAndAgronaForTheCounters()
    {
        final PackageGraph graph = PackageGraph.of(Path.of("target/classes"));

        assertThat(graph.packages()).containsExactlyInAnyOrder("io.reverb.common", "io.reverb.common.counters");
        assertThat(graph.cycles()).isEmpty();
        assertThat(graph.dependenciesOf("io.reverb.common"))
            .allMatch(p -> p.startsWith("java.") || p.startsWith("io.reverb.common") || p.startsWith("org.agrona"));
        // the write claim, result codes and log limiter need nothing but the JDK; the counters file is Agrona's
        // CountersManager layout, so only the counters package uses Agrona
        assertThat(graph.uses("io.reverb.common", "org.agrona")).isNotEmpty()
            .allMatch(use -> use.startsWith("io.reverb.common.counters -> "));
    }
}
