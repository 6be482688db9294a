package io.reverb.codegen;

import com.google.protobuf.DescriptorProtos.DescriptorProto;
import com.google.protobuf.DescriptorProtos.EnumDescriptorProto;
import com.google.protobuf.DescriptorProtos.EnumValueDescriptorProto;
import com.google.protobuf.DescriptorProtos.FileDescriptorProto;
import com.google.protobuf.DescriptorProtos.FileOptions;
import com.google.protobuf.DescriptorProtos.MethodDescriptorProto;
import com.google.protobuf.DescriptorProtos.ServiceDescriptorProto;
import com.google.protobuf.compiler.PluginProtos.CodeGeneratorRequest;
import com.google.protobuf.compiler.PluginProtos.CodeGeneratorResponse;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * What the plugin cannot turn into correct Java becomes a protoc error naming the file and the element,
 * with no files generated.
 */
class GenerationErrorsTest
{
    private static final DescriptorProto MSG = DescriptorProto.newBuilder().setName("Msg").build();

    @Test
    void shouldRejectMethodsWhoseJavaNamesCollide()
    {
        final CodeGeneratorResponse response = generate(file("svc/clash.proto", "svc")
            .addService(service("Greeter", method("SayHello"), method("sayHello"))));

        assertThat(response.getError())
            .isEqualTo("svc/clash.proto: service svc.Greeter, method sayHello: its Java name sayHello is also the " +
                "Java name of method SayHello; rename one of them");
        assertThat(response.getFileList()).isEmpty();
    }

    @Test
    void shouldRejectMethodsWhoseConstantsCollide()
    {
        final CodeGeneratorResponse response = generate(file("svc/clash.proto", "svc")
            .addService(service("Greeter", method("fooBar"), method("FOO_BAR"))));

        assertThat(response.getError()).isEqualTo("svc/clash.proto: service svc.Greeter, method FOO_BAR: its Java name " +
            "METHOD_FOO_BAR is also the Java name of method fooBar; rename one of them");
    }

    @Test
    void shouldRejectRpcClassNamedLikeTheOuterClass()
    {
        final CodeGeneratorResponse response = generate(file("svc/greeter_rpc.proto", "svc")
            .addService(service("Greeter", method("SayHello"))));

        assertThat(response.getError()).isEqualTo("svc/greeter_rpc.proto: service svc.Greeter: the generated class " +
            "svc.GreeterRpc would have the name of a class protoc generates for svc/greeter_rpc.proto (its outer class, " +
            "or a message or enum with java_multiple_files); rename the service or that type, or set option " +
            "java_outer_classname");
    }

    @Test
    void shouldRejectRpcClassNamedLikeAMessageOfTheSamePackage()
    {
        final CodeGeneratorResponse response = generate(file("svc/a.proto", "svc")
            .setOptions(FileOptions.newBuilder().setJavaMultipleFiles(true))
            .addMessageType(DescriptorProto.newBuilder().setName("GreeterRpc"))
            .addService(service("Greeter", method("SayHello"))));

        assertThat(response.getError()).startsWith("svc/a.proto: service svc.Greeter: the generated class svc.GreeterRpc" +
            " would have the name of a class protoc generates for svc/a.proto");
    }

    @Test
    void shouldRejectRpcClassNamedLikeAnEnumOfAnotherFileInTheSameJavaPackage()
    {
        final FileDescriptorProto other = FileDescriptorProto.newBuilder().setName("other/b.proto").setPackage("other")
            .setOptions(FileOptions.newBuilder().setJavaPackage("svc").setJavaMultipleFiles(true))
            .addEnumType(EnumDescriptorProto.newBuilder().setName("GreeterRpc")
                .addValue(EnumValueDescriptorProto.newBuilder().setName("X").setNumber(0)))
            .build();
        final FileDescriptorProto file = file("svc/a.proto", "svc").addDependency("other/b.proto")
            .addService(service("Greeter", method("SayHello"))).build();

        final CodeGeneratorResponse response = ReverbCodeGenerator.generate(CodeGeneratorRequest.newBuilder()
            .addFileToGenerate("svc/a.proto").addProtoFile(other).addProtoFile(file).build());

        assertThat(response.getError()).startsWith("svc/a.proto: service svc.Greeter: the generated class svc.GreeterRpc" +
            " would have the name of a class protoc generates for other/b.proto");
    }

    @Test
    void shouldAcceptMessageNamedLikeTheRpcClassWhenNestedInTheOuterClass()
    {
        final CodeGeneratorResponse response = generate(file("svc/a.proto", "svc")
            .addMessageType(DescriptorProto.newBuilder().setName("GreeterRpc"))
            .addService(service("Greeter", method("SayHello"))));

        assertThat(response.getError()).isEmpty();
        assertThat(response.getFile(0).getName()).isEqualTo("svc/GreeterRpc.java");
    }

    @Test
    void shouldRejectJavaPackageThatIsNotJava()
    {
        final CodeGeneratorResponse response = generate(file("svc/a.proto", "com.example.class")
            .addService(service("Greeter", method("SayHello"))));

        assertThat(response.getError()).isEqualTo("svc/a.proto: service com.example.class.Greeter: the Java package " +
            "'com.example.class' is not valid Java ('class'); set option java_package");
    }

    @Test
    void shouldAcceptContextualKeywordsInJavaPackage()
    {
        // JLS 7.4.1: a package name is made of Identifiers, which record, var, yield, sealed and permits are
        final CodeGeneratorResponse fromProtoPackage = generate(file("acme/a.proto", "acme.record.v1")
            .addService(service("Greeter", method("SayHello")
                .setInputType(".acme.record.v1.Msg").setOutputType(".acme.record.v1.Msg"))));
        final CodeGeneratorResponse fromJavaPackage = generate(file("svc/a.proto", "svc")
            .setOptions(FileOptions.newBuilder().setJavaPackage("com.var.yield.sealed.permits"))
            .addService(service("Greeter", method("SayHello"))));

        assertThat(fromProtoPackage.getError()).isEmpty();
        assertThat(fromProtoPackage.getFile(0).getName()).isEqualTo("acme/record/v1/GreeterRpc.java");
        assertThat(fromProtoPackage.getFile(0).getContent()).contains("package acme.record.v1;", "acme.record.v1.A.Msg");
        assertThat(fromJavaPackage.getError()).isEmpty();
        assertThat(fromJavaPackage.getFile(0).getName()).isEqualTo("com/var/yield/sealed/permits/GreeterRpc.java");
    }

    @Test
    void shouldRejectContextualKeywordAsClassName()
    {
        final CodeGeneratorResponse response = generate(file("svc/a.proto", "svc")
            .addMessageType(DescriptorProto.newBuilder().setName("record"))
            .addService(service("Greeter", method("SayHello").setInputType(".svc.record"))));

        assertThat(response.getError()).isEqualTo("svc/a.proto: service svc.Greeter, method SayHello: the input type " +
            ".svc.record maps to the Java class svc.A.record, which is not a valid Java name ('record'); set option " +
            "java_package in svc/a.proto or rename the type");
    }

    @Test
    void shouldRejectTypeMissingFromTheRequest()
    {
        final CodeGeneratorResponse response = generate(file("svc/a.proto", "svc")
            .addService(ServiceDescriptorProto.newBuilder().setName("Greeter")
                .addMethod(MethodDescriptorProto.newBuilder().setName("M")
                    .setInputType(".other.Missing").setOutputType(".svc.Msg"))));

        assertThat(response.getError()).isEqualTo("svc/a.proto: service svc.Greeter, method M: the input type " +
            ".other.Missing is not a message defined in any file protoc passed to the plugin");
    }

    @Test
    void shouldRejectTwoServicesGeneratingTheSameFile()
    {
        final FileDescriptorProto first = file("a/one.proto", "a").setOptions(FileOptions.newBuilder().setJavaPackage("same"))
            .addService(service("Greeter", method("SayHello").setInputType(".a.Msg").setOutputType(".a.Msg"))).build();
        final FileDescriptorProto second = file("b/two.proto", "b").setOptions(FileOptions.newBuilder().setJavaPackage("same"))
            .addService(service("Greeter", method("SayHello").setInputType(".b.Msg").setOutputType(".b.Msg"))).build();

        final CodeGeneratorResponse response = ReverbCodeGenerator.generate(CodeGeneratorRequest.newBuilder()
            .addFileToGenerate("a/one.proto").addFileToGenerate("b/two.proto")
            .addProtoFile(first).addProtoFile(second).build());

        assertThat(response.getError()).isEqualTo("b/two.proto: service b.Greeter: generates same/GreeterRpc.java, as " +
            "service a.Greeter does; give the files different java_package options or rename a service");
    }

    @Test
    void shouldRejectParameters()
    {
        final CodeGeneratorResponse response = ReverbCodeGenerator.generate(CodeGeneratorRequest.newBuilder()
            .setParameter("lite").build());

        assertThat(response.getError()).contains("'lite'").contains("takes no parameters");
    }

    @Test
    void shouldGenerateNothingForFileWithoutServices()
    {
        final CodeGeneratorResponse response = generate(file("svc/a.proto", "svc"));

        assertThat(response.hasError()).isFalse();
        assertThat(response.getFileList()).isEmpty();
    }

    private static CodeGeneratorResponse generate(final FileDescriptorProto.Builder file)
    {
        final FileDescriptorProto built = file.build();
        return ReverbCodeGenerator.generate(CodeGeneratorRequest.newBuilder()
            .addFileToGenerate(built.getName())
            .addAllProtoFile(List.of(built))
            .build());
    }

    private static FileDescriptorProto.Builder file(final String name, final String protoPackage)
    {
        return FileDescriptorProto.newBuilder().setName(name).setPackage(protoPackage).setSyntax("proto3").addMessageType(MSG);
    }

    private static ServiceDescriptorProto.Builder service(final String name, final MethodDescriptorProto.Builder... methods)
    {
        final ServiceDescriptorProto.Builder service = ServiceDescriptorProto.newBuilder().setName(name);
        for (final MethodDescriptorProto.Builder method : methods)
        {
            service.addMethod(method);
        }
        return service;
    }

    private static MethodDescriptorProto.Builder method(final String name)
    {
        return MethodDescriptorProto.newBuilder().setName(name).setInputType(".svc.Msg").setOutputType(".svc.Msg");
    }
}
