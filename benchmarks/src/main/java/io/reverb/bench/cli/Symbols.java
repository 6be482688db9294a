package io.reverb.bench.cli;

import com.google.protobuf.Descriptors.Descriptor;
import com.google.protobuf.Descriptors.EnumDescriptor;
import com.google.protobuf.Descriptors.FileDescriptor;
import com.google.protobuf.Descriptors.GenericDescriptor;
import com.google.protobuf.Descriptors.MethodDescriptor;
import com.google.protobuf.Descriptors.ServiceDescriptor;
import java.util.List;

/**
 * Finds a service, method ({@code pkg.Service.Method}), message or enum (nested ones as {@code pkg.Outer.Inner}) by
 * its full name among the definitions of one file.
 */
final class Symbols
{
    private Symbols()
    {
    }

    /**
     * @param file     the file.
     * @param fullName the symbol's full name.
     * @return its descriptor, or null if the file does not define it.
     */
    static GenericDescriptor find(final FileDescriptor file, final String fullName)
    {
        for (final ServiceDescriptor service : file.getServices())
        {
            if (service.getFullName().equals(fullName))
            {
                return service;
            }
            for (final MethodDescriptor method : service.getMethods())
            {
                if (method.getFullName().equals(fullName))
                {
                    return method;
                }
            }
        }
        final GenericDescriptor type = findType(file.getMessageTypes(), fullName);
        return type != null ? type : findEnum(file.getEnumTypes(), fullName);
    }

    private static GenericDescriptor findType(final List<Descriptor> types, final String fullName)
    {
        for (final Descriptor type : types)
        {
            if (type.getFullName().equals(fullName))
            {
                return type;
            }
            if (fullName.startsWith(type.getFullName() + "."))
            {
                final GenericDescriptor nested = findType(type.getNestedTypes(), fullName);
                return nested != null ? nested : findEnum(type.getEnumTypes(), fullName);
            }
        }
        return null;
    }

    private static GenericDescriptor findEnum(final List<EnumDescriptor> enums, final String fullName)
    {
        for (final EnumDescriptor type : enums)
        {
            if (type.getFullName().equals(fullName))
            {
                return type;
            }
        }
        return null;
    }
}
