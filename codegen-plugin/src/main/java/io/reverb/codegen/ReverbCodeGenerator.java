package io.reverb.codegen;

import com.google.protobuf.DescriptorProtos.Edition;
import com.google.protobuf.DescriptorProtos.FileDescriptorProto;
import com.google.protobuf.compiler.PluginProtos.CodeGeneratorRequest;
import com.google.protobuf.compiler.PluginProtos.CodeGeneratorResponse;

import java.util.HashMap;
import java.util.Map;

/**
 * Turns a {@code CodeGeneratorRequest} into a {@code CodeGeneratorResponse}: one {@code FooRpc.java} per
 * service of each file to generate. A proto it cannot handle yields a response whose {@code error} names
 * the file and the element, and no files: protoc prints the error and fails the build.
 */
public final class ReverbCodeGenerator
{
    private static final long SUPPORTED_FEATURES =
        CodeGeneratorResponse.Feature.FEATURE_PROTO3_OPTIONAL_VALUE |
        CodeGeneratorResponse.Feature.FEATURE_SUPPORTS_EDITIONS_VALUE;

    private ReverbCodeGenerator()
    {
    }

    /**
     * @param request what protoc sends on the plugin's standard input.
     * @return what the plugin writes back.
     */
    public static CodeGeneratorResponse generate(final CodeGeneratorRequest request)
    {
        final CodeGeneratorResponse.Builder response = CodeGeneratorResponse.newBuilder()
            .setSupportedFeatures(SUPPORTED_FEATURES)
            .setMinimumEdition(Edition.EDITION_PROTO2_VALUE)
            // Edition 2024 changes Java class naming (nest_in_file_class, new outer class defaults): not supported yet.
            .setMaximumEdition(Edition.EDITION_2023_VALUE);
        try
        {
            if (!request.getParameter().isEmpty())
            {
                throw new GenerationException("(plugin parameter)", "'" + request.getParameter() + "'",
                    "the Reverb plugin takes no parameters");
            }
            final JavaTypeIndex types = new JavaTypeIndex(request.getProtoFileList());
            final Map<String, String> sourceByOutput = new HashMap<>();
            for (final String fileName : request.getFileToGenerateList())
            {
                final FileDescriptorProto file = types.file(fileName);
                if (null == file)
                {
                    throw new GenerationException(fileName, "file", "protoc did not pass its descriptor to the plugin");
                }
                for (int i = 0; i < file.getServiceCount(); i++)
                {
                    final ServiceModel service = ServiceModel.of(file, i, types);
                    final String previous = sourceByOutput.putIfAbsent(service.outputFileName(), service.fullName());
                    if (null != previous)
                    {
                        throw new GenerationException(fileName, "service " + service.fullName(),
                            "generates " + service.outputFileName() + ", as service " + previous +
                            " does; give the files different java_package options or rename a service");
                    }
                    response.addFile(CodeGeneratorResponse.File.newBuilder()
                        .setName(service.outputFileName())
                        .setContent(ServiceWriter.write(service)));
                }
            }
        }
        catch (final GenerationException ex)
        {
            return response.clearFile().setError(ex.getMessage()).build();
        }
        return response.build();
    }
}
