package io.reverb.bench.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.protobuf.DescriptorProtos.FileDescriptorProto;
import com.google.protobuf.DescriptorProtos.FileDescriptorSet;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link Protoc}: found where the build puts it (Surefire passes {@code -Dreverb.protoc}, as the launchers do),
 * compiling {@code .proto} files that import each other through an import path and import well-known types that no
 * import path holds, and failing with protoc's own message.
 */
class ProtocTest
{
    @Test
    void shouldFindTheProtocTheBuildCopiedAndRunIt()
    {
        assertThat(System.getProperty(Protoc.PROPERTY)).as("set by the pom for the tests").isNotBlank();
        final Protoc protoc = Protoc.locate(null);
        assertThat(Files.isExecutable(protoc.executable())).isTrue();
        assertThat(Protoc.mavenRepositoryProtoc().toString())
            .endsWith("com/google/protobuf/protoc/" + Protoc.runtimeVersion() + "/protoc-" + Protoc.runtimeVersion() +
                "-" + Protoc.classifier() + ".exe");
    }

    @Test
    void shouldCompileFilesWithImportsAndWellKnownTypes(@TempDir final Path dir) throws IOException
    {
        Files.createDirectories(dir.resolve("acme/common"));
        Files.writeString(dir.resolve("acme/common/money.proto"), """
            syntax = "proto3";
            package acme.common;
            message Money { string currency = 1; int64 units = 2; }
            """);
        Files.createDirectories(dir.resolve("acme/orders"));
        Files.writeString(dir.resolve("acme/orders/orders.proto"), """
            syntax = "proto3";
            package acme.orders;
            import "acme/common/money.proto";
            import "google/protobuf/timestamp.proto";
            import "google/protobuf/struct.proto";
            message Order { acme.common.Money total = 1; google.protobuf.Timestamp at = 2;
              google.protobuf.Struct extra = 3; }
            service Orders { rpc Get(Order) returns (Order); }
            """);

        final FileDescriptorSet set = Protoc.locate(null).compile(List.of(Path.of("acme/orders/orders.proto")),
            List.of(dir));

        assertThat(set.getFileList()).extracting(FileDescriptorProto::getName).containsExactlyInAnyOrder(
            "acme/common/money.proto", "google/protobuf/timestamp.proto", "google/protobuf/struct.proto",
            "acme/orders/orders.proto");
        final ProtosetSource source = new ProtosetSource(set, "test");
        assertThat(source.listServices()).containsExactly("acme.orders.Orders");
        assertThat(DynamicMethod.resolve(source, "acme.orders.Orders/Get").fullMethodName())
            .isEqualTo("acme.orders.Orders/Get");
    }

    @Test
    void shouldFailWithProtocsMessageWhenAnImportIsMissing(@TempDir final Path dir) throws IOException
    {
        final Path file = dir.resolve("lonely.proto");
        Files.writeString(file, "syntax = \"proto3\";\nimport \"elsewhere/gone.proto\";\n");

        assertThatThrownBy(() -> Protoc.locate(null).compile(List.of(file), List.of()))
            .isInstanceOf(CliException.class)
            .hasMessageStartingWith("ERROR: protoc could not compile ")
            .hasMessageContaining("elsewhere/gone.proto")
            .satisfies(ex -> assertThat(((CliException)ex).exitCode()).isEqualTo(CliException.USAGE));
    }
}
