package io.reverb.codegen;

/**
 * A proto the plugin cannot turn into correct Java. The message names the file and the element, and
 * becomes the {@code error} of the {@code CodeGeneratorResponse}, which protoc prints and fails on.
 */
public final class GenerationException extends RuntimeException
{
    private static final long serialVersionUID = 1L;

    /**
     * @param protoFile the .proto file being generated, as protoc names it.
     * @param element   the element at fault, e.g. {@code "service foo.Greeter, method GetClass"}.
     * @param reason    what is wrong and, where there is one, how to fix it.
     */
    public GenerationException(final String protoFile, final String element, final String reason)
    {
        super(protoFile + ": " + element + ": " + reason);
    }
}
