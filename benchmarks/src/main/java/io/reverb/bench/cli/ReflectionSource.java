package io.reverb.bench.cli;

import com.google.protobuf.ByteString;
import com.google.protobuf.DescriptorProtos.FileDescriptorProto;
import com.google.protobuf.Descriptors.FileDescriptor;
import com.google.protobuf.InvalidProtocolBufferException;
import io.reverb.rpc.Status;
import io.reverb.services.reflection.ErrorResponse;
import io.reverb.services.reflection.ServerReflectionRequest;
import io.reverb.services.reflection.ServerReflectionResponse;
import io.reverb.services.reflection.ServiceResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;

/**
 * Descriptors from the server's reflection service ({@code grpc.reflection.v1.ServerReflection}), one request a
 * stream. A failure of the stream itself (no connection, no reflection service) is {@link CliException#NO_CONNECTION};
 * an error the service answers (an unknown symbol) is {@link CliException#CALL_FAILED}. What the server sends is
 * bounded: one response a request (a second ends the stream), and the files {@link FileBuilder} holds.
 */
public final class ReflectionSource implements DescriptorSource
{
    private final CliTarget target;
    private final String address;
    private final Duration deadline;
    private final FileBuilder files;

    /**
     * @param target   where to send the reflection requests.
     * @param address  the server's address, for messages.
     * @param deadline how long each reflection exchange may take.
     */
    public ReflectionSource(final CliTarget target, final String address, final Duration deadline)
    {
        this.target = target;
        this.address = address;
        this.deadline = deadline;
        this.files = new FileBuilder(name -> protos(ask(ServerReflectionRequest.newBuilder()
            .setFileByFilename(name).build())), "the reflection service at " + address);
    }

    @Override
    public List<String> listServices()
    {
        final ServerReflectionResponse response = ask(ServerReflectionRequest.newBuilder().setListServices("").build());
        if (!response.hasListServicesResponse())
        {
            throw new CliException(CliException.NO_CONNECTION, "ERROR: the reflection service at " + address +
                " answered list_services with " + response.getMessageResponseCase());
        }
        final List<String> names = new ArrayList<>();
        for (final ServiceResponse service : response.getListServicesResponse().getServiceList())
        {
            names.add(service.getName());
        }
        return names;
    }

    @Override
    public FileDescriptor fileContaining(final String symbol)
    {
        final List<FileDescriptorProto> answer = protos(ask(ServerReflectionRequest.newBuilder()
            .setFileContainingSymbol(symbol).build()));
        if (answer.isEmpty())
        {
            throw new CliException(CliException.NO_CONNECTION, "ERROR: the reflection service at " + address +
                " answered no file for " + Printable.name(symbol));
        }
        for (final FileDescriptorProto proto : answer)
        {
            files.offer(proto);
        }
        return files.build(answer.get(0).getName());
    }

    @Override
    public Collection<FileDescriptor> knownFiles()
    {
        return files.built().values();
    }

    private ServerReflectionResponse ask(final ServerReflectionRequest request)
    {
        final List<ServerReflectionResponse> responses;
        try
        {
            responses = target.reflect(request, deadline);
        }
        catch (final CliTarget.CallFailure failure)
        {
            final String why = "UNIMPLEMENTED".equals(failure.code()) ? "no reflection service (grpc.reflection.v1)"
                : "cannot reach the reflection service";
            throw new CliException(CliException.NO_CONNECTION, "ERROR: " + why + " at " + address + ": " +
                Printable.name(failure.getMessage()));
        }
        if (responses.size() != 1)
        {
            // a target reads at most CliTarget.REFLECTION_RESPONSE_LIMIT: more than one is all that can be said
            throw new CliException(CliException.NO_CONNECTION, "ERROR: the reflection service at " + address +
                " answered one request with " + (responses.size() > 1 ? "more than one response" : "no response"));
        }
        final ServerReflectionResponse response = responses.get(0);
        if (response.hasErrorResponse())
        {
            final ErrorResponse error = response.getErrorResponse();
            throw new CliException(CliException.CALL_FAILED, "ERROR: " +
                Status.fromCodeValue(error.getErrorCode()).code().name() + ": " + Printable.name(error.getErrorMessage()));
        }
        return response;
    }

    private List<FileDescriptorProto> protos(final ServerReflectionResponse response)
    {
        if (!response.hasFileDescriptorResponse())
        {
            throw new CliException(CliException.NO_CONNECTION, "ERROR: the reflection service at " + address +
                " answered a file request with " + response.getMessageResponseCase());
        }
        final List<FileDescriptorProto> protos = new ArrayList<>();
        for (final ByteString bytes : response.getFileDescriptorResponse().getFileDescriptorProtoList())
        {
            try
            {
                protos.add(FileDescriptorProto.parseFrom(bytes));
            }
            catch (final InvalidProtocolBufferException ex)
            {
                throw new CliException(CliException.NO_CONNECTION, "ERROR: the reflection service at " + address +
                    " sent a file descriptor that does not parse: " + ex.getMessage());
            }
        }
        return protos;
    }
}
