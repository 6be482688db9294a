package io.reverb.services.reflection;

import com.google.protobuf.Descriptors.Descriptor;
import com.google.protobuf.Descriptors.EnumDescriptor;
import com.google.protobuf.Descriptors.EnumValueDescriptor;
import com.google.protobuf.Descriptors.FieldDescriptor;
import com.google.protobuf.Descriptors.FileDescriptor;
import com.google.protobuf.Descriptors.MethodDescriptor;
import com.google.protobuf.Descriptors.OneofDescriptor;
import com.google.protobuf.Descriptors.ServiceDescriptor;
import io.reverb.rpc.RpcServer;
import io.reverb.rpc.ServiceDefinition;
import io.reverb.rpc.StatusCode;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;
import reactor.core.publisher.Flux;

/**
 * The gRPC server reflection service, {@code grpc.reflection.v1.ServerReflection}, served natively by a Reverb
 * server: tools such as grpcurl (over reverb-grpc) or a reflection client over any Reverb URI list the server's
 * services and fetch the protobuf descriptors of their files, with no .proto at hand.
 *
 * <p>Add it like the health service, after every other service, so that it knows them all:
 *
 * <pre>{@code
 * RpcServer.Builder builder = RpcServer.builder(uri)
 *     .addService(new GreeterService())
 *     .addService(health.healthService());
 * ReflectionService.addTo(builder);            // or builder.addService(ReflectionService.of(services))
 * RpcServer server = builder.build().start();
 * }</pre>
 *
 * <p>It answers from the descriptors the generated service bases put in their {@link ServiceDefinition}
 * ({@link ServiceDefinition#protoDescriptor()}), read once when it is made: the files of the services and every
 * file they import, transitively.
 * <ul>
 *   <li>{@code list_services}: every service given, and this one, in the order given.</li>
 *   <li>{@code file_containing_symbol}: the file defining a service, method ({@code pkg.Svc.Method}), message or
 *       enum (nested ones too, {@code pkg.Outer.Inner}), field, oneof, enum value ({@code pkg.VALUE}, protobuf's
 *       scope) or extension, by its fully qualified name (a leading dot is allowed), as grpc-go answers.</li>
 *   <li>{@code file_by_filename}: a file by its name as protoc saw it.</li>
 *   <li>{@code file_containing_extension}, {@code all_extension_numbers_of_type}: from the extensions those files
 *       declare.</li>
 * </ul>
 * A file answer holds the file asked for, then those of its transitive dependencies not yet sent on this stream
 * (as grpc does: a client builds the descriptors from all it received on the stream). A name it does not know gets
 * an {@code error_response} with NOT_FOUND, a malformed request (nothing asked, an empty name) one with
 * INVALID_ARGUMENT; either way the stream goes on and answers the next request. Each request gets exactly one
 * response, in order. A service without a descriptor (built by hand, not generated from a .proto) is listed but
 * its symbols are NOT_FOUND. Immutable and thread-safe; each stream's record of files sent is its own.
 */
public final class ReflectionService extends ServerReflectionRpc.ServerReflectionImplBase
{
    /** Longest part of a client's name quoted back in an error message. */
    static final int MAX_QUOTED_NAME = 200;

    private final List<String> serviceNames;
    private final Map<String, FileDescriptor> fileByName;
    private final Map<String, FileDescriptor> fileBySymbol;
    /** Message full name to its extensions by number; every indexed message has an entry, possibly empty. */
    private final Map<String, Map<Integer, FieldDescriptor>> extensionsByType;

    private ReflectionService(final Collection<ServiceDefinition> services)
    {
        final List<String> names = new ArrayList<>();
        final List<FileDescriptor> roots = new ArrayList<>();
        for (final ServiceDefinition service : services)
        {
            Objects.requireNonNull(service, "service");
            if (names.contains(service.serviceName()))
            {
                throw new IllegalArgumentException("service given twice: " + service.serviceName());
            }
            names.add(service.serviceName());
            if (service.protoDescriptor() != null)
            {
                roots.add(service.protoDescriptor().getFile());
            }
        }
        if (!names.contains(ServerReflectionRpc.SERVICE_NAME))
        {
            names.add(ServerReflectionRpc.SERVICE_NAME);
            roots.add(ServerReflectionProto.getDescriptor());
        }
        this.serviceNames = List.copyOf(names);

        final Map<String, FileDescriptor> files = new LinkedHashMap<>();
        final ArrayDeque<FileDescriptor> frontier = new ArrayDeque<>(roots);
        while (!frontier.isEmpty())
        {
            final FileDescriptor file = frontier.poll();
            // the first of two files of one name wins (a second copy on the class path means the same file)
            if (files.putIfAbsent(file.getName(), file) == null)
            {
                frontier.addAll(file.getDependencies());
            }
        }
        this.fileByName = Collections.unmodifiableMap(files);

        final Map<String, FileDescriptor> symbols = new HashMap<>();
        final Map<String, Map<Integer, FieldDescriptor>> extensions = new HashMap<>();
        for (final FileDescriptor file : files.values())
        {
            index(file, symbols, extensions);
        }
        this.fileBySymbol = Collections.unmodifiableMap(symbols);
        this.extensionsByType = Collections.unmodifiableMap(extensions);
    }

    /**
     * @param services the services of the server (generated ones carry their descriptors); this service is added
     *                 to what {@code list_services} answers unless given.
     * @return a reflection service over them, to add to the server.
     * @throws IllegalArgumentException if a service name is given twice.
     */
    public static ReflectionService of(final Collection<ServiceDefinition> services)
    {
        return new ReflectionService(List.copyOf(Objects.requireNonNull(services, "services")));
    }

    /**
     * Adds a reflection service over the services added to the builder so far: call it after adding the others.
     *
     * @param builder a server builder.
     * @return the builder.
     */
    public static RpcServer.Builder addTo(final RpcServer.Builder builder)
    {
        return builder.addService(of(builder.services()));
    }

    /**
     * @return the service names {@code list_services} answers, in order.
     */
    public List<String> serviceNames()
    {
        return serviceNames;
    }

    /**
     * Serves one reflection stream: one response per request, in order.
     *
     * @param requests the requests of the stream.
     * @return the responses.
     */
    @Override
    public Flux<ServerReflectionResponse> serverReflectionInfo(final Flux<ServerReflectionRequest> requests)
    {
        return Flux.defer(() ->
        {
            // touched by one request at a time: map() is serial
            final Set<String> sentFiles = new HashSet<>();
            return requests.map(request -> answer(request, sentFiles));
        });
    }

    /**
     * @param request   a request.
     * @param sentFiles names of the files this stream has sent so far; updated.
     * @return its response.
     */
    ServerReflectionResponse answer(final ServerReflectionRequest request, final Set<String> sentFiles)
    {
        final ServerReflectionResponse.Builder response = ServerReflectionResponse.newBuilder()
            .setValidHost(request.getHost())
            .setOriginalRequest(request);
        switch (request.getMessageRequestCase())
        {
            case FILE_BY_FILENAME:
                return fileByFilename(request.getFileByFilename(), sentFiles, response);
            case FILE_CONTAINING_SYMBOL:
                return fileContainingSymbol(request.getFileContainingSymbol(), sentFiles, response);
            case FILE_CONTAINING_EXTENSION:
                return fileContainingExtension(request.getFileContainingExtension(), sentFiles, response);
            case ALL_EXTENSION_NUMBERS_OF_TYPE:
                return allExtensionNumbers(request.getAllExtensionNumbersOfType(), response);
            case LIST_SERVICES:
                return listServices(response);
            case MESSAGEREQUEST_NOT_SET:
            default:
                return error(response, StatusCode.INVALID_ARGUMENT,
                    "the request sets none of file_by_filename, file_containing_symbol, file_containing_extension, " +
                    "all_extension_numbers_of_type, list_services");
        }
    }

    private ServerReflectionResponse listServices(final ServerReflectionResponse.Builder response)
    {
        final ListServiceResponse.Builder list = ListServiceResponse.newBuilder();
        for (final String name : serviceNames)
        {
            list.addService(ServiceResponse.newBuilder().setName(name));
        }
        return response.setListServicesResponse(list).build();
    }

    private ServerReflectionResponse fileByFilename(
        final String name, final Set<String> sentFiles, final ServerReflectionResponse.Builder response)
    {
        if (name.isEmpty())
        {
            return error(response, StatusCode.INVALID_ARGUMENT, "file_by_filename is empty");
        }
        final FileDescriptor file = fileByName.get(name);
        if (file == null)
        {
            return error(response, StatusCode.NOT_FOUND, "unknown file: " + quote(name));
        }
        return files(file, sentFiles, response);
    }

    private ServerReflectionResponse fileContainingSymbol(
        final String symbol, final Set<String> sentFiles, final ServerReflectionResponse.Builder response)
    {
        if (symbol.isEmpty())
        {
            return error(response, StatusCode.INVALID_ARGUMENT, "file_containing_symbol is empty");
        }
        // grpcurl and others sometimes send ".pkg.Msg"; the leading dot is the same name
        final FileDescriptor file = fileBySymbol.get(symbol.startsWith(".") ? symbol.substring(1) : symbol);
        if (file == null)
        {
            return error(response, StatusCode.NOT_FOUND, "unknown symbol: " + quote(symbol));
        }
        return files(file, sentFiles, response);
    }

    private ServerReflectionResponse fileContainingExtension(
        final ExtensionRequest request, final Set<String> sentFiles, final ServerReflectionResponse.Builder response)
    {
        if (request.getContainingType().isEmpty())
        {
            return error(response, StatusCode.INVALID_ARGUMENT, "file_containing_extension.containing_type is empty");
        }
        final Map<Integer, FieldDescriptor> extensions = extensionsByType.get(request.getContainingType());
        if (extensions == null)
        {
            return error(response, StatusCode.NOT_FOUND, "unknown type: " + quote(request.getContainingType()));
        }
        final FieldDescriptor extension = extensions.get(request.getExtensionNumber());
        if (extension == null)
        {
            return error(response, StatusCode.NOT_FOUND, "no extension " + request.getExtensionNumber() + " of " +
                quote(request.getContainingType()));
        }
        return files(extension.getFile(), sentFiles, response);
    }

    private ServerReflectionResponse allExtensionNumbers(
        final String type, final ServerReflectionResponse.Builder response)
    {
        if (type.isEmpty())
        {
            return error(response, StatusCode.INVALID_ARGUMENT, "all_extension_numbers_of_type is empty");
        }
        final Map<Integer, FieldDescriptor> extensions = extensionsByType.get(type);
        if (extensions == null)
        {
            return error(response, StatusCode.NOT_FOUND, "unknown type: " + quote(type));
        }
        return response.setAllExtensionNumbersResponse(ExtensionNumberResponse.newBuilder()
            .setBaseTypeName(type)
            .addAllExtensionNumber(extensions.keySet()))
            .build();
    }

    /** The file, always, then its transitive dependencies this stream has not sent, breadth first. */
    private static ServerReflectionResponse files(
        final FileDescriptor file, final Set<String> sentFiles, final ServerReflectionResponse.Builder response)
    {
        final FileDescriptorResponse.Builder files = FileDescriptorResponse.newBuilder();
        final Set<String> inThisResponse = new HashSet<>();
        final ArrayDeque<FileDescriptor> frontier = new ArrayDeque<>();
        frontier.add(file);
        inThisResponse.add(file.getName());
        while (!frontier.isEmpty())
        {
            final FileDescriptor next = frontier.poll();
            files.addFileDescriptorProto(next.toProto().toByteString());
            sentFiles.add(next.getName());
            for (final FileDescriptor dependency : next.getDependencies())
            {
                if (!sentFiles.contains(dependency.getName()) && inThisResponse.add(dependency.getName()))
                {
                    frontier.add(dependency);
                }
            }
        }
        return response.setFileDescriptorResponse(files).build();
    }

    private static ServerReflectionResponse error(
        final ServerReflectionResponse.Builder response, final StatusCode code, final String message)
    {
        return response.setErrorResponse(ErrorResponse.newBuilder()
            .setErrorCode(code.value())
            .setErrorMessage(message))
            .build();
    }

    /** A client's name in an error message: at most {@link #MAX_QUOTED_NAME} characters, so an answer stays small. */
    static String quote(final String name)
    {
        return name.length() <= MAX_QUOTED_NAME ?
            "\"" + name + "\"" : "\"" + name.substring(0, MAX_QUOTED_NAME) + "\"... (" + name.length() + " chars)";
    }

    private static void index(
        final FileDescriptor file,
        final Map<String, FileDescriptor> symbols,
        final Map<String, Map<Integer, FieldDescriptor>> extensions)
    {
        for (final ServiceDescriptor service : file.getServices())
        {
            symbols.putIfAbsent(service.getFullName(), file);
            for (final MethodDescriptor method : service.getMethods())
            {
                symbols.putIfAbsent(method.getFullName(), file);
            }
        }
        for (final Descriptor message : file.getMessageTypes())
        {
            indexMessage(message, symbols, extensions);
        }
        for (final EnumDescriptor enumType : file.getEnumTypes())
        {
            indexEnum(enumType, symbols);
        }
        indexExtensions(file.getExtensions(), symbols, extensions);
    }

    private static void indexEnum(final EnumDescriptor enumType, final Map<String, FileDescriptor> symbols)
    {
        symbols.putIfAbsent(enumType.getFullName(), enumType.getFile());
        // the language scopes enum values beside their enum (pkg.VALUE, as grpc-go names them), where protobuf-java's
        // getFullName() says pkg.Enum.VALUE
        final String scope = enumType.getContainingType() != null ?
            enumType.getContainingType().getFullName() : enumType.getFile().getPackage();
        for (final EnumValueDescriptor value : enumType.getValues())
        {
            symbols.putIfAbsent(scope.isEmpty() ? value.getName() : scope + "." + value.getName(), enumType.getFile());
        }
    }

    private static void indexMessage(
        final Descriptor message,
        final Map<String, FileDescriptor> symbols,
        final Map<String, Map<Integer, FieldDescriptor>> extensions)
    {
        symbols.putIfAbsent(message.getFullName(), message.getFile());
        extensions.computeIfAbsent(message.getFullName(), name -> new TreeMap<>());
        for (final FieldDescriptor field : message.getFields())
        {
            symbols.putIfAbsent(field.getFullName(), message.getFile());
        }
        for (final OneofDescriptor oneof : message.getOneofs())
        {
            symbols.putIfAbsent(oneof.getFullName(), message.getFile());
        }
        for (final Descriptor nested : message.getNestedTypes())
        {
            indexMessage(nested, symbols, extensions);
        }
        for (final EnumDescriptor enumType : message.getEnumTypes())
        {
            indexEnum(enumType, symbols);
        }
        indexExtensions(message.getExtensions(), symbols, extensions);
    }

    private static void indexExtensions(
        final List<FieldDescriptor> declared,
        final Map<String, FileDescriptor> symbols,
        final Map<String, Map<Integer, FieldDescriptor>> extensions)
    {
        for (final FieldDescriptor extension : declared)
        {
            symbols.putIfAbsent(extension.getFullName(), extension.getFile());
            extensions.computeIfAbsent(extension.getContainingType().getFullName(), name -> new TreeMap<>())
                .putIfAbsent(extension.getNumber(), extension);
        }
    }
}
