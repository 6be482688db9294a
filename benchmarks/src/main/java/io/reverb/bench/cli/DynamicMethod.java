package io.reverb.bench.cli;

import com.google.protobuf.Descriptors;
import com.google.protobuf.Descriptors.Descriptor;
import com.google.protobuf.Descriptors.FileDescriptor;
import com.google.protobuf.DynamicMessage;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.util.JsonFormat;
import io.grpc.protobuf.ProtoUtils;
import io.reverb.rpc.MethodDescriptor;
import io.reverb.rpc.MethodDescriptor.MethodType;
import io.reverb.rpc.protobuf.ProtoMarshaller;
import java.util.ArrayDeque;
import java.util.Collection;
import java.util.HashSet;
import java.util.Objects;
import java.util.Set;

/**
 * One RPC method known only from its protobuf descriptors (reflection or a protoset), callable without generated
 * code: a Reverb {@link MethodDescriptor} and a grpc-java {@link io.grpc.MethodDescriptor}, both over
 * {@link DynamicMessage}, and JSON in and out through protobuf's {@link JsonFormat} with a type registry of every
 * message of the files given (so that {@code google.protobuf.Any} fields print and parse).
 *
 * <p>reverb-cli's {@code call} and reverb-bench's {@code --call} use it.
 */
public final class DynamicMethod
{
    private final Descriptors.MethodDescriptor method;
    private final JsonFormat.TypeRegistry registry;
    private final JsonFormat.Parser parser;
    private final JsonFormat.Printer printer;

    private DynamicMethod(final Descriptors.MethodDescriptor method, final JsonFormat.TypeRegistry registry)
    {
        this.method = Objects.requireNonNull(method, "method");
        this.registry = Objects.requireNonNull(registry, "registry");
        this.parser = JsonFormat.parser().usingTypeRegistry(registry);
        this.printer = JsonFormat.printer().usingTypeRegistry(registry);
    }

    /**
     * @param method the method's descriptor.
     * @param files  files whose messages (with their imports, transitively) may appear in {@code Any} fields; the
     *               method's own file is always included.
     * @return the method, callable dynamically.
     */
    public static DynamicMethod of(final Descriptors.MethodDescriptor method, final Collection<FileDescriptor> files)
    {
        final Set<FileDescriptor> all = new HashSet<>(files);
        all.add(method.getFile());
        return new DynamicMethod(method, registryOf(all));
    }

    /**
     * @param name a method's name, {@code pkg.Service/Method} or {@code pkg.Service.Method}.
     * @return the service's full name and the method's name, or null if {@code name} has neither form.
     */
    public static String[] splitName(final String name)
    {
        final int slash = name.lastIndexOf('/') >= 0 ? name.lastIndexOf('/') : name.lastIndexOf('.');
        if (slash <= 0 || slash == name.length() - 1)
        {
            return null;
        }
        return new String[] {name.substring(0, slash), name.substring(slash + 1)};
    }

    /**
     * Finds a method in a source of descriptors.
     *
     * @param source where the descriptors come from.
     * @param name   {@code pkg.Service/Method} or {@code pkg.Service.Method}.
     * @return the method, with the JSON type registry of every file the source has built.
     * @throws CliException {@link CliException#USAGE} if the name is malformed or names no service;
     *                      {@link CliException#CALL_FAILED} (NOT_FOUND) if the service or method does not exist.
     */
    public static DynamicMethod resolve(final DescriptorSource source, final String name)
    {
        final String[] parts = splitName(name);
        if (parts == null)
        {
            throw new CliException(CliException.USAGE, "ERROR: a method is pkg.Service/Method: '" + name + "'");
        }
        final FileDescriptor file = source.fileContaining(parts[0]);
        final Descriptors.GenericDescriptor symbol = Symbols.find(file, parts[0]);
        if (!(symbol instanceof Descriptors.ServiceDescriptor))
        {
            throw new CliException(CliException.USAGE, "ERROR: " + parts[0] + " is not a service");
        }
        final Descriptors.MethodDescriptor descriptor =
            ((Descriptors.ServiceDescriptor)symbol).findMethodByName(parts[1]);
        if (descriptor == null)
        {
            throw new CliException(CliException.CALL_FAILED, "ERROR: NOT_FOUND: service " + parts[0] +
                " has no method " + parts[1]);
        }
        return of(descriptor, source.knownFiles());
    }

    /**
     * @param files files; their imports are followed transitively.
     * @return a registry of every message type they define, nested ones included.
     */
    public static JsonFormat.TypeRegistry registryOf(final Collection<FileDescriptor> files)
    {
        final JsonFormat.TypeRegistry.Builder builder = JsonFormat.TypeRegistry.newBuilder();
        final Set<String> seen = new HashSet<>();
        final ArrayDeque<FileDescriptor> queue = new ArrayDeque<>(files);
        while (!queue.isEmpty())
        {
            final FileDescriptor file = queue.poll();
            if (seen.add(file.getName()))
            {
                builder.add(file.getMessageTypes()); // adds nested types and the types of fields too
                queue.addAll(file.getDependencies());
            }
        }
        return builder.build();
    }

    /**
     * @return the protobuf descriptor of the method.
     */
    public Descriptors.MethodDescriptor descriptor()
    {
        return method;
    }

    /**
     * @return the wire name, {@code pkg.Service/Method}.
     */
    public String fullMethodName()
    {
        return method.getService().getFullName() + "/" + method.getName();
    }

    /**
     * @return the kind of call, in Reverb's terms.
     */
    public MethodType type()
    {
        if (method.isClientStreaming())
        {
            return method.isServerStreaming() ? MethodType.BIDI_STREAMING
                : MethodType.CLIENT_STREAMING;
        }
        return method.isServerStreaming() ? MethodType.SERVER_STREAMING
            : MethodType.UNARY;
    }

    /**
     * @return the method for a Reverb channel, marshalling {@link DynamicMessage}s of its input and output types.
     */
    public MethodDescriptor<DynamicMessage, DynamicMessage> reverbMethod()
    {
        return MethodDescriptor.<DynamicMessage, DynamicMessage>newBuilder()
            .type(type())
            .fullMethodName(fullMethodName())
            .requestMarshaller(ProtoMarshaller.of(DynamicMessage.getDefaultInstance(method.getInputType())))
            .responseMarshaller(ProtoMarshaller.of(DynamicMessage.getDefaultInstance(method.getOutputType())))
            .build();
    }

    // CHECKSTYLE.OFF: InlineFullyQualifiedName (grpc-java's MethodDescriptor beside Reverb's)
    /**
     * @return the method for a grpc-java channel, marshalling {@link DynamicMessage}s of its input and output types.
     */
    public io.grpc.MethodDescriptor<DynamicMessage, DynamicMessage> grpcMethod()
    {
        final io.grpc.MethodDescriptor.MethodType grpcType;
        switch (type())
        {
            case UNARY:
                grpcType = io.grpc.MethodDescriptor.MethodType.UNARY;
                break;
            case SERVER_STREAMING:
                grpcType = io.grpc.MethodDescriptor.MethodType.SERVER_STREAMING;
                break;
            case CLIENT_STREAMING:
                grpcType = io.grpc.MethodDescriptor.MethodType.CLIENT_STREAMING;
                break;
            default:
                grpcType = io.grpc.MethodDescriptor.MethodType.BIDI_STREAMING;
                break;
        }
        return io.grpc.MethodDescriptor.<DynamicMessage, DynamicMessage>newBuilder()
            .setType(grpcType)
            .setFullMethodName(fullMethodName())
            .setRequestMarshaller(ProtoUtils.marshaller(DynamicMessage.getDefaultInstance(method.getInputType())))
            .setResponseMarshaller(ProtoUtils.marshaller(DynamicMessage.getDefaultInstance(method.getOutputType())))
            .build();
    }
    // CHECKSTYLE.ON: InlineFullyQualifiedName

    /**
     * @param json a request as JSON (protobuf's JSON mapping).
     * @return the request.
     * @throws InvalidProtocolBufferException if the JSON is malformed or does not fit the input type.
     */
    public DynamicMessage parseRequest(final String json) throws InvalidProtocolBufferException
    {
        final Descriptor input = method.getInputType();
        final DynamicMessage.Builder builder = DynamicMessage.newBuilder(input);
        parser.merge(json, builder);
        return builder.build();
    }

    /**
     * @param message a message of a type of this method's files.
     * @return it as JSON (protobuf's JSON mapping, indented).
     * @throws InvalidProtocolBufferException if it holds an {@code Any} of a type the registry does not know.
     */
    public String toJson(final DynamicMessage message) throws InvalidProtocolBufferException
    {
        return printer.print(message);
    }

    /**
     * @return the registry that JSON uses for {@code Any} fields.
     */
    public JsonFormat.TypeRegistry registry()
    {
        return registry;
    }
}
