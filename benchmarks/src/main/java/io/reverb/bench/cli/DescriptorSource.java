package io.reverb.bench.cli;

import com.google.protobuf.Descriptors.FileDescriptor;
import java.util.Collection;
import java.util.List;

/**
 * Where reverb-cli finds services and message types: the server's reflection service ({@link ReflectionSource}) or a
 * protoset file ({@link ProtosetSource}).
 */
public interface DescriptorSource
{
    /**
     * @return the full names of the services.
     */
    List<String> listServices();

    /**
     * @param symbol the full name of a service, method ({@code pkg.Service.Method}), message or enum.
     * @return the file that defines it, built with its imports.
     * @throws CliException ({@link CliException#CALL_FAILED}, NOT_FOUND) if no file defines it.
     */
    FileDescriptor fileContaining(String symbol);

    /**
     * @return every file this source has built so far, for the JSON type registry ({@code Any}).
     */
    Collection<FileDescriptor> knownFiles();
}
