package io.reverb.bench.cli;

import com.google.protobuf.DescriptorProtos.FileDescriptorProto;
import com.google.protobuf.DescriptorProtos.FileDescriptorSet;
import com.google.protobuf.Descriptors.FileDescriptor;
import com.google.protobuf.InvalidProtocolBufferException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Descriptors from a protoset: a binary {@code google.protobuf.FileDescriptorSet}, as grpcurl's {@code -protoset}
 * reads, written by {@code protoc --include_imports --descriptor_set_out=FILE}. No protoc is needed at run time.
 * {@code --proto} files come here too, once {@link Protoc} has compiled them.
 */
public final class ProtosetSource implements DescriptorSource
{
    private final Map<String, FileDescriptor> files = new LinkedHashMap<>();
    private final String origin;

    /**
     * @param path the protoset file.
     * @throws CliException ({@link CliException#USAGE}) if it cannot be read, does not parse, or lacks an import.
     */
    public ProtosetSource(final Path path)
    {
        this(read(path), "protoset " + path);
    }

    /**
     * @param set    the files, with their imports.
     * @param origin where they come from, for messages (e.g. {@code "protoset FILE"}).
     * @throws CliException ({@link CliException#USAGE}) if a file lacks an import or does not build.
     */
    public ProtosetSource(final FileDescriptorSet set, final String origin)
    {
        this.origin = origin;
        final Map<String, FileDescriptorProto> protos = new LinkedHashMap<>();
        for (final FileDescriptorProto proto : set.getFileList())
        {
            protos.put(proto.getName(), proto);
        }
        final FileBuilder builder = new FileBuilder(name ->
        {
            final FileDescriptorProto proto = protos.get(name);
            if (proto == null)
            {
                throw new CliException(CliException.USAGE, "ERROR: " + origin + " lacks " + name +
                    " (build it with protoc --include_imports)");
            }
            return List.of(proto);
        }, origin);
        for (final String name : protos.keySet())
        {
            files.put(name, builder.build(name));
        }
    }

    private static FileDescriptorSet read(final Path path)
    {
        try
        {
            return FileDescriptorSet.parseFrom(Files.readAllBytes(path));
        }
        catch (final InvalidProtocolBufferException ex)
        {
            throw new CliException(CliException.USAGE, "ERROR: " + path + " is not a FileDescriptorSet (protoc " +
                "--include_imports --descriptor_set_out=FILE writes one): " + ex.getMessage());
        }
        catch (final IOException ex)
        {
            throw new CliException(CliException.USAGE, "ERROR: cannot read protoset " + path + ": " + ex);
        }
    }

    @Override
    public List<String> listServices()
    {
        final List<String> names = new ArrayList<>();
        for (final FileDescriptor file : files.values())
        {
            file.getServices().forEach(service -> names.add(service.getFullName()));
        }
        return names;
    }

    @Override
    public FileDescriptor fileContaining(final String symbol)
    {
        for (final FileDescriptor file : files.values())
        {
            if (Symbols.find(file, symbol) != null)
            {
                return file;
            }
        }
        throw new CliException(CliException.CALL_FAILED, "ERROR: NOT_FOUND: symbol not found in the " + origin +
            ": " + symbol);
    }

    @Override
    public Collection<FileDescriptor> knownFiles()
    {
        return files.values();
    }
}
