package io.reverb.bench.cli;

import com.google.protobuf.DescriptorProtos.DescriptorProto;
import com.google.protobuf.DescriptorProtos.FieldDescriptorProto;
import com.google.protobuf.DescriptorProtos.FileDescriptorProto;
import com.google.protobuf.Descriptors.DescriptorValidationException;
import com.google.protobuf.Descriptors.FileDescriptor;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;
import java.util.regex.Pattern;

/**
 * Builds {@link FileDescriptor}s from {@link FileDescriptorProto}s, imports first, fetching each file it has not
 * seen through a function (a reflection request, a protoset lookup); every file built once.
 *
 * <p>The files may come from a hostile server, so what it holds is bounded: the depth of an import chain (the build
 * recurses along it: a chain of thousands would overflow the stack), the number of files and their total size. A
 * set beyond a bound is refused with {@link CliException#CALL_FAILED} and a message that names the bound; real
 * descriptor sets stay far below them (all of googleapis is about 2,000 files, chains a dozen deep).
 */
final class FileBuilder
{
    /** The deepest import chain built: a file, its import, that one's import, ... */
    static final int MAX_IMPORT_DEPTH = 100;
    /** The most files held. */
    static final int MAX_FILES = 5_000;
    /** The most bytes of files held (serialized size, summed). */
    static final long MAX_BYTES = 16L << 20;
    /** What a field's {@code json_name} may be: protobuf's JSON printer writes it unescaped. */
    private static final Pattern JSON_NAME = Pattern.compile("[A-Za-z0-9_]+");

    private final Function<String, List<FileDescriptorProto>> fetch;
    private final String origin;
    private final Map<String, FileDescriptorProto> protos = new HashMap<>();
    private final Map<String, FileDescriptor> built = new HashMap<>();
    private final Set<String> building = new HashSet<>();
    private long bytes;

    /**
     * @param fetch  returns the file of a name (first) and any others it likes; throws {@link CliException} if none.
     * @param origin where the files come from, for messages (e.g. {@code "the reflection service at tcp://..."}).
     */
    FileBuilder(final Function<String, List<FileDescriptorProto>> fetch, final String origin)
    {
        this.fetch = fetch;
        this.origin = origin;
    }

    /**
     * @param proto a file already at hand (it and others that came with it in one answer).
     * @throws CliException ({@link CliException#CALL_FAILED}) if it would take the files held past
     *                      {@link #MAX_FILES} or {@link #MAX_BYTES}.
     */
    void offer(final FileDescriptorProto proto)
    {
        if (protos.containsKey(proto.getName()))
        {
            return;
        }
        if (protos.size() >= MAX_FILES)
        {
            throw new CliException(CliException.CALL_FAILED, "ERROR: " + origin + " sent more than " + MAX_FILES +
                " descriptor files; refusing the rest");
        }
        final int size = proto.getSerializedSize();
        if (bytes + size > MAX_BYTES)
        {
            throw new CliException(CliException.CALL_FAILED, "ERROR: " + origin + " sent more than " +
                (MAX_BYTES >> 20) + " MiB of descriptor files; refusing the rest");
        }
        bytes += size;
        protos.put(proto.getName(), proto);
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
        return build(name, 1);
    }

    private FileDescriptor build(final String name, final int depth)
    {
        final FileDescriptor done = built.get(name);
        if (done != null)
        {
            return done;
        }
        if (depth > MAX_IMPORT_DEPTH)
        {
            throw new CliException(CliException.CALL_FAILED, "ERROR: the descriptors of " + origin + " import " +
                "more than " + MAX_IMPORT_DEPTH + " files deep (at " + Printable.name(name) + "); refusing them");
        }
        if (!building.add(name))
        {
            throw new CliException(CliException.CALL_FAILED, "ERROR: the descriptors import in a cycle through " +
                Printable.name(name));
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
                        Printable.name(name));
                }
            }
            final FileDescriptor[] dependencies = new FileDescriptor[proto.getDependencyCount()];
            for (int i = 0; i < dependencies.length; i++)
            {
                dependencies[i] = build(proto.getDependency(i), depth + 1);
            }
            checkJsonNames(proto);
            final FileDescriptor file;
            try
            {
                file = FileDescriptor.buildFrom(proto, dependencies);
            }
            catch (final RuntimeException ex)
            {
                // protobuf validates most of a descriptor, not all: a field with neither a type nor a type name
                // fails with a NullPointerException in its cross-linking (found by ReflectionSourceFuzzTest)
                throw new CliException(CliException.CALL_FAILED, "ERROR: invalid descriptor of " + Printable.name(name) +
                    ": " + Printable.name(String.valueOf(ex)));
            }
            built.put(name, file);
            return file;
        }
        catch (final DescriptorValidationException ex)
        {
            throw new CliException(CliException.CALL_FAILED, "ERROR: invalid descriptor of " + Printable.name(name) +
                ": " + Printable.name(ex.getMessage()));
        }
        finally
        {
            building.remove(name);
        }
    }

    /**
     * Refuses a field whose {@code json_name} is not a plain identifier: protobuf's JSON printer writes it between
     * quotes as it is, so a server could close the string and forge JSON, or lines, in every response printed.
     */
    private void checkJsonNames(final FileDescriptorProto proto)
    {
        for (final DescriptorProto message : proto.getMessageTypeList())
        {
            checkJsonNames(proto, message);
        }
        checkJsonNames(proto, proto.getExtensionList());
    }

    private void checkJsonNames(final FileDescriptorProto proto, final DescriptorProto message)
    {
        checkJsonNames(proto, message.getFieldList());
        checkJsonNames(proto, message.getExtensionList());
        for (final DescriptorProto nested : message.getNestedTypeList())
        {
            checkJsonNames(proto, nested);
        }
    }

    private void checkJsonNames(final FileDescriptorProto proto, final List<FieldDescriptorProto> fields)
    {
        for (final FieldDescriptorProto field : fields)
        {
            if (field.hasJsonName() && !JSON_NAME.matcher(field.getJsonName()).matches())
            {
                throw new CliException(CliException.CALL_FAILED, "ERROR: invalid descriptor of " +
                    Printable.name(proto.getName()) + " from " + origin + ": field " + Printable.name(field.getName()) +
                    " has json_name \"" + Printable.name(field.getJsonName()) + "\", not letters, digits and '_' " +
                    "only; refusing it");
            }
        }
    }
}
