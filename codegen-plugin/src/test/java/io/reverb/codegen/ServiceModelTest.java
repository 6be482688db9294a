package io.reverb.codegen;

import com.google.protobuf.DescriptorProtos.DescriptorProto;
import com.google.protobuf.DescriptorProtos.FileDescriptorProto;
import com.google.protobuf.DescriptorProtos.MethodDescriptorProto;
import com.google.protobuf.DescriptorProtos.ServiceDescriptorProto;
import io.reverb.rpc.RpcService;
import io.reverb.rpc.stub.AbstractReactorStub;
import org.junit.jupiter.api.Test;

import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The Java names {@link ServiceModel} decides for rpcs: grpc-java's, so code moving between the two generators
 * names the same methods.
 */
class ServiceModelTest
{
    @Test
    void shouldNameMethodsAndAccessorsLikeGrpcJava()
    {
        final ServiceModel service = model("Verify2fa", "Base64encode", "Get2faCode", "get2fa_code_v2", "SayHello",
            "say_hello_again", "_Internal", "HTTPGet");

        // grpc-java's MixedLower: lower-case the first character, drop each '_' and upper-case what follows it;
        // a digit leaves the next letter as it is. The accessor is MixedLower("get_" + name + "_method").
        assertThat(service.methods()).extracting(ServiceModel.Method::javaName).containsExactly(
            "verify2fa", "base64encode", "get2faCode", "get2faCodeV2", "sayHello", "sayHelloAgain", "_Internal", "hTTPGet");
        assertThat(service.methods()).extracting(ServiceModel.Method::accessorName).containsExactly(
            "getVerify2faMethod", "getBase64encodeMethod", "getGet2faCodeMethod", "getGet2faCodeV2Method",
            "getSayHelloMethod", "getSayHelloAgainMethod", "getInternalMethod", "getHTTPGetMethod");
        assertThat(service.methods()).extracting(ServiceModel.Method::constantName).containsExactly(
            "METHOD_VERIFY2FA", "METHOD_BASE64ENCODE", "METHOD_GET2FA_CODE", "METHOD_GET2FA_CODE_V2", "METHOD_SAY_HELLO",
            "METHOD_SAY_HELLO_AGAIN", "METHOD__INTERNAL", "METHOD_HTTPGET");
    }

    @Test
    void shouldRenameEveryMemberTheStubAndServiceBaseInherit()
    {
        final List<String> inherited = new ArrayList<>();
        for (final Class<?> type : List.of(AbstractReactorStub.class, RpcService.class))
        {
            for (final Method method : type.getDeclaredMethods())
            {
                if (!method.isSynthetic() && (Modifier.isPublic(method.getModifiers()) ||
                    Modifier.isProtected(method.getModifiers())))
                {
                    inherited.add(method.getName());
                }
            }
        }

        assertThat(inherited).contains("withCompression", "bindService");
        assertThat(ServiceModel.INHERITED_MEMBERS).containsAll(inherited);
        assertThat(model("WithCompression").methods().get(0).javaName()).isEqualTo("withCompression_");
    }

    private static ServiceModel model(final String... methodNames)
    {
        final ServiceDescriptorProto.Builder service = ServiceDescriptorProto.newBuilder().setName("Greeter");
        for (final String name : methodNames)
        {
            service.addMethod(MethodDescriptorProto.newBuilder().setName(name)
                .setInputType(".svc.Msg").setOutputType(".svc.Msg"));
        }
        final FileDescriptorProto file = FileDescriptorProto.newBuilder().setName("svc/a.proto").setPackage("svc")
            .setSyntax("proto3").addMessageType(DescriptorProto.newBuilder().setName("Msg")).addService(service).build();
        return ServiceModel.of(file, 0, new JavaTypeIndex(List.of(file)));
    }
}
