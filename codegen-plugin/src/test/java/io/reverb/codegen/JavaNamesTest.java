package io.reverb.codegen;

import com.google.protobuf.DescriptorProtos.DescriptorProto;
import com.google.protobuf.DescriptorProtos.EnumDescriptorProto;
import com.google.protobuf.DescriptorProtos.FileDescriptorProto;
import com.google.protobuf.DescriptorProtos.FileOptions;
import com.google.protobuf.DescriptorProtos.ServiceDescriptorProto;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

class JavaNamesTest
{
    @Test
    void shouldCamelCaseLikeProtoc()
    {
        assertThat(JavaNames.underscoresToCamelCase("say_hello", false)).isEqualTo("sayHello");
        assertThat(JavaNames.underscoresToCamelCase("SayHello", false)).isEqualTo("sayHello");
        assertThat(JavaNames.underscoresToCamelCase("say_hello", true)).isEqualTo("SayHello");
        assertThat(JavaNames.underscoresToCamelCase("get2fa_code", false)).isEqualTo("get2FaCode");
        assertThat(JavaNames.underscoresToCamelCase("HTTPGet", false)).isEqualTo("hTTPGet");
    }

    @Test
    void shouldMixedLowerLikeGrpcJava()
    {
        assertThat(JavaNames.mixedLower("SayHello")).isEqualTo("sayHello");
        assertThat(JavaNames.mixedLower("say_hello")).isEqualTo("sayHello");
        assertThat(JavaNames.mixedLower("Verify2fa")).isEqualTo("verify2fa");
        assertThat(JavaNames.mixedLower("get2fa_code")).isEqualTo("get2faCode");
        assertThat(JavaNames.mixedLower("_Internal")).as("a leading underscore stays").isEqualTo("_Internal");
        assertThat(JavaNames.mixedLower("get__internal_method")).isEqualTo("getInternalMethod");
        assertThat(JavaNames.mixedLower("trailing_")).isEqualTo("trailing");
        assertThat(JavaNames.mixedLower("HTTPGet")).isEqualTo("hTTPGet");
    }

    @Test
    void shouldAllowContextualKeywordsInPackagesButNotAsClassNames()
    {
        for (final String word : List.of("record", "var", "yield", "sealed", "permits"))
        {
            assertThat(JavaNames.isValidIdentifier(word)).as(word).isTrue();
            assertThat(JavaNames.isValidTypeIdentifier(word)).as(word).isFalse();
        }
        for (final String word : List.of("class", "true", "false", "null", "_", "non-sealed", "", "2fa"))
        {
            assertThat(JavaNames.isValidIdentifier(word)).as(word).isFalse();
            assertThat(JavaNames.isValidTypeIdentifier(word)).as(word).isFalse();
        }
        assertThat(JavaNames.isValidTypeIdentifier("Record")).isTrue();
    }

    @Test
    void shouldUpperSnakeCaseLikeGrpcJava()
    {
        assertThat(JavaNames.upperSnakeCase("SayHello")).isEqualTo("SAY_HELLO");
        assertThat(JavaNames.upperSnakeCase("say_hello")).isEqualTo("SAY_HELLO");
        assertThat(JavaNames.upperSnakeCase("HTTPGet")).isEqualTo("HTTPGET");
    }

    @Test
    void shouldNameOuterClassAfterFileUnlessSet()
    {
        assertThat(JavaTypeIndex.outerClassName(file("foo/route_guide.proto").build())).isEqualTo("RouteGuide");
        assertThat(JavaTypeIndex.outerClassName(file("foo/v2-api.proto").build())).isEqualTo("V2Api");
        assertThat(JavaTypeIndex.outerClassName(file("foo/route_guide.proto")
            .setOptions(FileOptions.newBuilder().setJavaOuterClassname("RouteGuideProto")).build()))
            .isEqualTo("RouteGuideProto");
    }

    @Test
    void shouldAppendOuterClassWhenAnyTypeOfTheFileHasTheDefaultName()
    {
        assertThat(JavaTypeIndex.outerClassName(file("a/greeter.proto")
            .addService(ServiceDescriptorProto.newBuilder().setName("Greeter")).build()))
            .isEqualTo("GreeterOuterClass");
        assertThat(JavaTypeIndex.outerClassName(file("a/greeter.proto")
            .addMessageType(DescriptorProto.newBuilder().setName("Outer")
                .addEnumType(EnumDescriptorProto.newBuilder().setName("Greeter"))).build()))
            .isEqualTo("GreeterOuterClass");
        assertThat(JavaTypeIndex.outerClassName(file("a/greeter.proto")
            .addMessageType(DescriptorProto.newBuilder().setName("greeter")).build()))
            .as("the rule compares exactly, case included")
            .isEqualTo("Greeter");
    }

    @Test
    void shouldMapMessagesToProtocJavaClasses()
    {
        final FileDescriptorProto nested = file("a/b.proto").setPackage("p")
            .addMessageType(DescriptorProto.newBuilder().setName("M")
                .addNestedType(DescriptorProto.newBuilder().setName("N"))).build();
        final FileDescriptorProto multiple = file("a/c.proto").setPackage("q")
            .setOptions(FileOptions.newBuilder().setJavaPackage("com.example.q").setJavaMultipleFiles(true))
            .addMessageType(DescriptorProto.newBuilder().setName("M")).build();
        final FileDescriptorProto noPackage = file("d.proto")
            .addMessageType(DescriptorProto.newBuilder().setName("M")).build();

        final JavaTypeIndex index = new JavaTypeIndex(List.of(nested, multiple, noPackage));

        assertThat(index.javaClassName(".p.M")).isEqualTo("p.B.M");
        assertThat(index.javaClassName(".p.M.N")).isEqualTo("p.B.M.N");
        assertThat(index.javaClassName(".q.M")).isEqualTo("com.example.q.M");
        assertThat(index.javaClassName(".M")).isEqualTo("D.M");
        assertThat(index.javaClassName(".p.Missing")).isNull();
    }

    @Test
    void shouldEscapeEverythingThatCouldBreakJavadoc()
    {
        assertThat(Javadoc.escape("a */ b")).isEqualTo("a *&#47; b");
        assertThat(Javadoc.escape("@deprecated {@link X}")).isEqualTo("&#64;deprecated {&#64;link X}");
        assertThat(Javadoc.escape("<script> & </pre>")).isEqualTo("&lt;script&gt; &amp; &lt;/pre&gt;");
        assertThat(Javadoc.escape("\\u002a/")).isEqualTo("&#92;u002a/");
        assertThat(Javadoc.escape("a / b * c")).isEqualTo("a / b * c");
    }

    private static FileDescriptorProto.Builder file(final String name)
    {
        return FileDescriptorProto.newBuilder().setName(name).setSyntax("proto3");
    }
}
