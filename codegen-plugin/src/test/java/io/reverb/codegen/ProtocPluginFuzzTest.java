package io.reverb.codegen;

import static org.assertj.core.api.Assertions.assertThat;

import com.code_intelligence.jazzer.junit.FuzzTest;
import com.google.protobuf.DescriptorProtos.FileDescriptorProto;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.compiler.PluginProtos.CodeGeneratorRequest;
import com.google.protobuf.compiler.PluginProtos.CodeGeneratorResponse;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Fuzz target for the protoc plugin's request handling (issue 13): whatever bytes arrive on its standard
 * input, the plugin either refuses them as an unparsable request or answers with a response, an error in it
 * for what it cannot generate; it never fails any other way. Regression mode runs the checked-in corpus
 * ({@code src/test/resources/io/reverb/codegen/ProtocPluginFuzzTestInputs/handlesAnyRequest/}); see FUZZING.md
 * at the repository root to fuzz it.
 */
class ProtocPluginFuzzTest
{
    @FuzzTest
    void handlesAnyRequest(final byte[] input) throws IOException
    {
        final ByteArrayOutputStream out = new ByteArrayOutputStream();
        try
        {
            ReverbProtocPlugin.run(new ByteArrayInputStream(input), out);
        }
        catch (final InvalidProtocolBufferException expected)
        {
            return; // not a CodeGeneratorRequest: protoc reports the plugin's failure
        }
        final CodeGeneratorResponse response = CodeGeneratorResponse.parseFrom(out.toByteArray());
        if (!response.hasError())
        {
            for (final CodeGeneratorResponse.File file : response.getFileList())
            {
                assertThat(file.getName()).endsWith(".java").doesNotStartWith("/").doesNotContain("..");
                assertThat(file.getContent()).isNotEmpty();
            }
        }
    }

    /**
     * Writes the seed corpus from the test protos (run once by hand from the module directory after
     * {@code mvn test-compile}; the files are checked in).
     *
     * @param args the corpus directory.
     * @throws IOException if writing fails.
     */
    public static void main(final String[] args) throws IOException
    {
        final Path dir = Files.createDirectories(Path.of(args[0]).resolve("handlesAnyRequest"));
        final CodeGeneratorRequest all = TestProtos.request();
        Files.write(dir.resolve("all-test-protos"), all.toByteArray());
        for (final String name : TestProtos.FILES_TO_GENERATE)
        {
            final CodeGeneratorRequest.Builder one = CodeGeneratorRequest.newBuilder().addFileToGenerate(name);
            for (final FileDescriptorProto file : all.getProtoFileList())
            {
                one.addProtoFile(file);
                if (file.getName().equals(name))
                {
                    break; // protoc lists dependencies first
                }
            }
            Files.write(dir.resolve("one-" + name.replace('/', '_')), one.build().toByteArray());
        }
        Files.write(dir.resolve("missing-file"),
            CodeGeneratorRequest.newBuilder().addFileToGenerate("nope.proto").build().toByteArray());
        Files.write(dir.resolve("parameter"), CodeGeneratorRequest.newBuilder().setParameter("x=1").build().toByteArray());
    }
}
