package io.reverb.bench.cli;

import com.google.protobuf.DescriptorProtos.DescriptorProto;
import com.google.protobuf.DescriptorProtos.FieldDescriptorProto;
import com.google.protobuf.DescriptorProtos.FileDescriptorProto;
import com.google.protobuf.DescriptorProtos.MethodDescriptorProto;
import com.google.protobuf.DescriptorProtos.ServiceDescriptorProto;
import io.reverb.services.reflection.ErrorResponse;
import io.reverb.services.reflection.FileDescriptorResponse;
import io.reverb.services.reflection.ListServiceResponse;
import io.reverb.services.reflection.ServerReflectionRequest;
import io.reverb.services.reflection.ServerReflectionResponse;
import io.reverb.services.reflection.ServerReflectionRpc;
import io.reverb.services.reflection.ServiceResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import reactor.core.publisher.Flux;

/**
 * A reflection service that lies, for reverb-cli's tests and attack cases: one {@link Mode} per hostile answer.
 * The service it describes is {@code evil.Svc} (a unary {@code Get}); {@link #sent()} counts the responses it emitted,
 * so a test can see that the client stopped a flood rather than read it.
 */
final class HostileReflection extends ServerReflectionRpc.ServerReflectionImplBase
{
    /** An escape sequence that sets the terminal's title, then one that clears the screen. */
    static final String ESCAPES = "\u001b]0;pwned\u0007\u001b[2J";
    /** A file name that would end its error message's line and forge the next one. */
    static final String FORGED_IMPORT = "b.proto\nreverb-cli: OK, 0 errors";
    /** A json_name that closes its JSON string, adds a member, then a line of its own. */
    static final String FORGED_JSON_NAME = "x\":1}\nreverb-cli: OK, 0 errors\n{\"y";

    /** What the service answers. */
    enum Mode
    {
        /** Service names, and errors, with terminal escape sequences and a forged line. */
        ESCAPES,
        /** The file of evil.Svc and, in the same answer, a chain of {@code size} files, each importing the next. */
        DEEP_IMPORTS,
        /** The file of evil.Svc importing f1; every file fetched by name imports one more, without end. */
        ENDLESS_IMPORTS,
        /** The file of evil.Svc importing {@code size} files, each fetched alone and about 1 MiB big. */
        BIG_FILES,
        /** Every request answered with {@code size} list_services responses. */
        FLOOD,
        /** The file of evil.Svc importing {@link #FORGED_IMPORT}; a file asked for by name answered with no file. */
        FORGED_IMPORT,
        /** The file of evil.Svc, whose message M has a field named {@link #FORGED_JSON_NAME} in JSON. */
        FORGED_JSON_NAME
    }

    private final Mode mode;
    private final int size;
    private final AtomicLong sent = new AtomicLong();

    /**
     * @param mode what to answer.
     * @param size the chain's length, the number of imports or responses, as the mode says.
     */
    HostileReflection(final Mode mode, final int size)
    {
        this.mode = mode;
        this.size = size;
    }

    /** @return how many responses the service emitted. */
    long sent()
    {
        return sent.get();
    }

    @Override
    public Flux<ServerReflectionResponse> serverReflectionInfo(final Flux<ServerReflectionRequest> requests)
    {
        return requests.concatMap(this::answer).doOnNext(response -> sent.incrementAndGet());
    }

    private Flux<ServerReflectionResponse> answer(final ServerReflectionRequest request)
    {
        if (mode == Mode.FLOOD)
        {
            final ServerReflectionResponse one = list("evil.Svc");
            return Flux.range(0, size).map(i -> one);
        }
        if (request.hasListServices())
        {
            return Flux.just(mode == Mode.ESCAPES ? list("evil.Svc" + ESCAPES, "evil\nERROR: forged line") :
                list("evil.Svc"));
        }
        if (mode == Mode.ESCAPES)
        {
            return Flux.just(ServerReflectionResponse.newBuilder().setErrorResponse(ErrorResponse.newBuilder()
                .setErrorCode(5).setErrorMessage("no such symbol" + ESCAPES)).build());
        }
        if (request.hasFileContainingSymbol())
        {
            final List<FileDescriptorProto> files = new ArrayList<>();
            switch (mode)
            {
                case DEEP_IMPORTS:
                    files.add(service("f1"));
                    for (int i = 1; i <= size; i++)
                    {
                        files.add(file("f" + i, i < size ? "f" + (i + 1) : null, 0));
                    }
                    break;
                case ENDLESS_IMPORTS:
                    files.add(service("f1"));
                    break;
                case FORGED_IMPORT:
                    files.add(service(FORGED_IMPORT));
                    break;
                case FORGED_JSON_NAME:
                    final FileDescriptorProto.Builder forged = service("none").toBuilder().clearDependency();
                    forged.getMessageTypeBuilder(0).addField(FieldDescriptorProto.newBuilder().setName("text")
                        .setNumber(1).setType(FieldDescriptorProto.Type.TYPE_STRING).setJsonName(FORGED_JSON_NAME));
                    files.add(forged.build());
                    break;
                default:
                    final FileDescriptorProto.Builder root = service("b0").toBuilder().clearDependency();
                    for (int i = 1; i <= size; i++)
                    {
                        root.addDependency("b" + i);
                    }
                    files.add(root.build());
                    break;
            }
            return Flux.just(files(files));
        }
        if (request.hasFileByFilename())
        {
            final String name = request.getFileByFilename();
            if (mode == Mode.FORGED_IMPORT)
            {
                return Flux.just(files(List.of()));
            }
            if (mode == Mode.ENDLESS_IMPORTS)
            {
                return Flux.just(files(List.of(file(name, "f" + (Integer.parseInt(name.substring(1)) + 1), 0))));
            }
            return Flux.just(files(List.of(file(name, null, 1 << 20))));
        }
        return Flux.just(ServerReflectionResponse.newBuilder().setErrorResponse(ErrorResponse.newBuilder()
            .setErrorCode(12).setErrorMessage("not this")).build());
    }

    private static ServerReflectionResponse list(final String... names)
    {
        final ListServiceResponse.Builder list = ListServiceResponse.newBuilder();
        for (final String name : names)
        {
            list.addService(ServiceResponse.newBuilder().setName(name));
        }
        return ServerReflectionResponse.newBuilder().setListServicesResponse(list).build();
    }

    private static ServerReflectionResponse files(final List<FileDescriptorProto> files)
    {
        final FileDescriptorResponse.Builder answer = FileDescriptorResponse.newBuilder();
        files.forEach(file -> answer.addFileDescriptorProto(file.toByteString()));
        return ServerReflectionResponse.newBuilder().setFileDescriptorResponse(answer).build();
    }

    /** @return the file of evil.Svc (package evil, a message M, a unary Get(M) returns (M)) importing {@code first}. */
    private static FileDescriptorProto service(final String first)
    {
        return FileDescriptorProto.newBuilder().setName("evil.proto").setPackage("evil").setSyntax("proto3")
            .addDependency(first)
            .addMessageType(DescriptorProto.newBuilder().setName("M"))
            .addService(ServiceDescriptorProto.newBuilder().setName("Svc")
                .addMethod(MethodDescriptorProto.newBuilder().setName("Get").setInputType(".evil.M")
                    .setOutputType(".evil.M")))
            .build();
    }

    /** @return an empty file of its own package, importing {@code next} (if not null), about {@code padding} big. */
    private static FileDescriptorProto file(final String name, final String next, final int padding)
    {
        final FileDescriptorProto.Builder file = FileDescriptorProto.newBuilder().setName(name).setPackage("p" + name);
        if (next != null)
        {
            file.addDependency(next);
        }
        if (padding > 0)
        {
            // a json_name is not validated: the cheapest way to make a big file that still builds
            file.addMessageType(DescriptorProto.newBuilder().setName("Pad").addField(FieldDescriptorProto.newBuilder()
                .setName("pad").setNumber(1).setType(FieldDescriptorProto.Type.TYPE_BYTES)
                .setJsonName("x".repeat(padding))));
        }
        return file.build();
    }
}
