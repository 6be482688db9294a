package io.reverb.bench.cli;

import com.google.protobuf.DescriptorProtos.FileDescriptorProto;
import com.google.protobuf.Descriptors.DescriptorValidationException;
import com.google.protobuf.Descriptors.FileDescriptor;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;

/**
 * Builds {@link FileDescriptor}s from {@link FileDescriptorProto}s, imports first, fetching each file it has not
 * seen through a function (a reflection request, a protoset lookup); every file built once.
 */
final class FileBuilder
{
    private final Function<String, List<FileDescriptorProto>> fetch;
    private final Map<String, FileDescriptorProto> protos = new HashMap<>();
    private final Map<String, FileDescriptor> built = new HashMap<>();
    private final Set<String> building = new HashSet<>();

    /**
     * @param fetch returns the file of a name (first) and any others it likes; throws {@link CliException} if none.
     */
    FileBuilder(final Function<String, List<FileDescriptorProto>> fetch)
    {
        this.fetch = fetch;
    }

    /**
     * @param proto a file already at hand (it and others that came with it in one answer).
     */
    void offer(final FileDescriptorProto proto)
    {
        protos.putIfAbsent(proto.getName(), proto);
    }

    /**
     * @return every file built so far.
     */
    Map<String, FileDescriptor> built()
    {
        return built;
    }

    /**
     * @param name a file's name, e.g. {@code reverb/health/v1/health.proto}.
     * @return the file, built with its imports.
     */
    FileDescriptor build(final String name)
    {
        final FileDescriptor done = built.get(name);
        if (done != null)
        {
            return done;
        }
        if (!building.add(name))
        {
            throw new CliException(CliException.CALL_FAILED, "ERROR: the descriptors import in a cycle through " +
                name);
        }
        try
        {
            FileDescriptorProto proto = protos.get(name);
            if (proto == null)
            {
                for (final FileDescriptorProto fetched : fetch.apply(name))
                {
                    offer(fetched);
                }
                proto = protos.get(name);
                if (proto == null)
                {
                    throw new CliException(CliException.CALL_FAILED, "ERROR: NOT_FOUND: no descriptor of file " +
                        name);
                }
            }
            final FileDescriptor[] dependencies = new FileDescriptor[proto.getDependencyCount()];
            for (int i = 0; i < dependencies.length; i++)
            {
                dependencies[i] = build(proto.getDependency(i));
            }
            final FileDescriptor file = FileDescriptor.buildFrom(proto, dependencies);
            built.put(name, file);
            return file;
        }
        catch (final DescriptorValidationException ex)
        {
            throw new CliException(CliException.CALL_FAILED, "ERROR: invalid descriptor of " + name + ": " +
                ex.getMessage());
        }
        finally
        {
            building.remove(name);
        }
    }
}
