package io.reverb.codegen;

import com.google.protobuf.compiler.PluginProtos.CodeGeneratorRequest;
import com.google.protobuf.compiler.PluginProtos.CodeGeneratorResponse;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;

/**
 * The protoc plugin entry point: reads a {@code CodeGeneratorRequest} from standard input and writes the
 * {@code CodeGeneratorResponse} to standard output. Run it as a JVM plugin of protobuf-maven-plugin
 * ({@code protocPlugins}), or by hand:
 * {@code protoc --plugin=protoc-gen-reverb=<script running this class> --reverb_out=DIR foo.proto}.
 */
public final class ReverbProtocPlugin
{
    private ReverbProtocPlugin()
    {
    }

    /**
     * @param args ignored: protoc passes everything on standard input.
     * @throws IOException if standard input or output fails.
     */
    public static void main(final String[] args) throws IOException
    {
        run(System.in, System.out);
        System.out.flush();
    }

    /**
     * @param in  a serialized {@code CodeGeneratorRequest}.
     * @param out where the serialized {@code CodeGeneratorResponse} goes.
     * @throws IOException if a stream fails or the request cannot be parsed.
     */
    public static void run(final InputStream in, final OutputStream out) throws IOException
    {
        final CodeGeneratorRequest request = CodeGeneratorRequest.parseFrom(in);
        final CodeGeneratorResponse response = ReverbCodeGenerator.generate(request);
        response.writeTo(out);
        out.flush();
    }
}
