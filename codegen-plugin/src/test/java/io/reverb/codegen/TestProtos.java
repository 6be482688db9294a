package io.reverb.codegen;

import com.google.protobuf.DescriptorProtos.FileDescriptorProto;
import com.google.protobuf.DescriptorProtos.FileDescriptorSet;
import com.google.protobuf.compiler.PluginProtos.CodeGeneratorRequest;
import com.google.protobuf.compiler.PluginProtos.CodeGeneratorResponse;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * The test protos of src/test/proto, as protoc compiled them during the build (a descriptor set with
 * imports and source info), and the plugin run on them the way protoc runs it.
 */
final class TestProtos
{
    /** The files of src/test/proto that the plugin is asked to generate. */
    static final List<String> FILES_TO_GENERATE = List.of(
        "reverb/test/kinds.proto",
        "reverb/test/model.proto",
        "reverb/test/plain_file.proto",
        "reverb/test/name_clash.proto",
        "reverb/test/contextual.proto",
        "no_package.proto");

    private TestProtos()
    {
    }

    static FileDescriptorSet descriptorSet() throws IOException
    {
        final String location =
            System.getProperty("reverb.testDescriptorSet", "target/test-descriptor-sets/codegen-test.protobin");
        try (InputStream in = Files.newInputStream(Path.of(location)))
        {
            return FileDescriptorSet.parseFrom(in);
        }
    }

    static CodeGeneratorRequest request() throws IOException
    {
        final List<FileDescriptorProto> files = descriptorSet().getFileList();
        return CodeGeneratorRequest.newBuilder()
            .addAllFileToGenerate(FILES_TO_GENERATE)
            .addAllProtoFile(files)
            .build();
    }

    /**
     * Runs the plugin through its stdin/stdout entry point on serialized bytes, as protoc does.
     */
    static CodeGeneratorResponse runPlugin(final CodeGeneratorRequest request) throws IOException
    {
        final ByteArrayOutputStream out = new ByteArrayOutputStream();
        ReverbProtocPlugin.run(new ByteArrayInputStream(request.toByteArray()), out);
        return CodeGeneratorResponse.parseFrom(out.toByteArray());
    }
}
