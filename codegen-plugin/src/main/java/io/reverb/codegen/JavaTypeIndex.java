package io.reverb.codegen;

import com.google.protobuf.DescriptorProtos.DescriptorProto;
import com.google.protobuf.DescriptorProtos.EnumDescriptorProto;
import com.google.protobuf.DescriptorProtos.FileDescriptorProto;

import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Where protoc's Java generator puts each message: maps a proto full name ({@code .pkg.Outer.Inner}) to
 * the fully qualified Java class name, from the files of a {@code CodeGeneratorRequest} (which carries
 * every file the ones to generate import, directly or not).
 */
public final class JavaTypeIndex
{
    private final Map<String, String> javaClassByProtoType = new HashMap<>();
    private final Map<String, String> javaPackageByProtoType = new HashMap<>();
    private final Map<String, String> protoFileByProtoType = new HashMap<>();
    private final Map<String, FileDescriptorProto> fileByName = new HashMap<>();
    private final Map<String, String> protoFileByTopLevelClass = new HashMap<>();
    private final Set<String> deprecatedProtoTypes = new HashSet<>();

    /**
     * @param files every file of the request, in any order.
     */
    public JavaTypeIndex(final List<FileDescriptorProto> files)
    {
        for (final FileDescriptorProto file : files)
        {
            fileByName.put(file.getName(), file);
            final String protoPrefix = file.getPackage().isEmpty() ? "." : "." + file.getPackage() + ".";
            final String javaPackage = javaPackage(file);
            final String packagePrefix = javaPackage.isEmpty() ? "" : javaPackage + ".";
            String javaPrefix = packagePrefix;
            protoFileByTopLevelClass.put(packagePrefix + outerClassName(file), file.getName());
            if (file.getOptions().getJavaMultipleFiles())
            {
                for (final DescriptorProto message : file.getMessageTypeList())
                {
                    protoFileByTopLevelClass.put(packagePrefix + message.getName(), file.getName());
                    protoFileByTopLevelClass.put(packagePrefix + message.getName() + "OrBuilder", file.getName());
                }
                for (final EnumDescriptorProto enumType : file.getEnumTypeList())
                {
                    protoFileByTopLevelClass.put(packagePrefix + enumType.getName(), file.getName());
                }
            }
            else
            {
                javaPrefix += outerClassName(file) + ".";
            }
            for (final DescriptorProto message : file.getMessageTypeList())
            {
                indexMessage(file.getName(), javaPackage, message, protoPrefix, javaPrefix, false);
            }
        }
    }

    /**
     * @param file a proto file.
     * @return {@code java_package} if set, otherwise the proto package (possibly empty).
     */
    public static String javaPackage(final FileDescriptorProto file)
    {
        return file.getOptions().hasJavaPackage() ? file.getOptions().getJavaPackage() : file.getPackage();
    }

    /**
     * protoc's outer class name: {@code java_outer_classname}, or the camel-cased file name, with
     * {@value JavaNames#OUTER_CLASS_SUFFIX} appended when a message, enum or service of the file (at any
     * nesting depth for messages and enums) has exactly that name.
     *
     * @param file a proto file.
     * @return the simple name of the file's outer class.
     */
    public static String outerClassName(final FileDescriptorProto file)
    {
        if (file.getOptions().hasJavaOuterClassname())
        {
            return file.getOptions().getJavaOuterClassname();
        }
        final String name = JavaNames.defaultOuterClassBaseName(file.getName());
        return hasTypeNamed(file, name) ? name + JavaNames.OUTER_CLASS_SUFFIX : name;
    }

    /**
     * @param protoTypeName a full name as used in a method's input or output type, e.g. {@code .pkg.Msg}.
     * @return the fully qualified Java class name, or null when no file of the request defines it.
     */
    public String javaClassName(final String protoTypeName)
    {
        return javaClassByProtoType.get(protoTypeName);
    }

    /**
     * @param protoTypeName a full name, e.g. {@code .pkg.Msg}.
     * @return the Java package of its class, the leading part of {@link #javaClassName} (possibly empty), or null
     *         when no file of the request defines it.
     */
    public String javaPackageOf(final String protoTypeName)
    {
        return javaPackageByProtoType.get(protoTypeName);
    }

    /**
     * protoc marks a message class {@code @java.lang.Deprecated} when the message has {@code option deprecated = true}
     * (not when only its file has); naming a nested class names every class enclosing it.
     *
     * @param protoTypeName a full name, e.g. {@code .pkg.Msg}.
     * @return whether the Java name of the type contains a class protoc marks deprecated.
     */
    public boolean namesDeprecatedClass(final String protoTypeName)
    {
        return deprecatedProtoTypes.contains(protoTypeName);
    }

    /**
     * @param protoTypeName a full name, e.g. {@code .pkg.Msg}.
     * @return the name of the file defining it, or null.
     */
    public String definingFile(final String protoTypeName)
    {
        return protoFileByProtoType.get(protoTypeName);
    }

    /**
     * @param javaClassName a fully qualified Java class name.
     * @return the proto file for which protoc's Java generator writes a top-level class of that name, or null.
     */
    public String fileGeneratingTopLevelClass(final String javaClassName)
    {
        return protoFileByTopLevelClass.get(javaClassName);
    }

    /**
     * @param name a file name as protoc reports it.
     * @return the file, or null when the request does not carry it.
     */
    public FileDescriptorProto file(final String name)
    {
        return fileByName.get(name);
    }

    private void indexMessage(
        final String fileName, final String javaPackage, final DescriptorProto message, final String protoPrefix,
        final String javaPrefix, final boolean inDeprecatedClass)
    {
        final String protoName = protoPrefix + message.getName();
        final String javaName = javaPrefix + message.getName();
        final boolean deprecated = inDeprecatedClass || message.getOptions().getDeprecated();
        javaClassByProtoType.put(protoName, javaName);
        javaPackageByProtoType.put(protoName, javaPackage);
        protoFileByProtoType.put(protoName, fileName);
        if (deprecated)
        {
            deprecatedProtoTypes.add(protoName);
        }
        for (final DescriptorProto nested : message.getNestedTypeList())
        {
            indexMessage(fileName, javaPackage, nested, protoName + ".", javaName + ".", deprecated);
        }
    }

    private static boolean hasTypeNamed(final FileDescriptorProto file, final String name)
    {
        for (final var service : file.getServiceList())
        {
            if (service.getName().equals(name))
            {
                return true;
            }
        }
        return hasTypeNamed(file.getEnumTypeList(), file.getMessageTypeList(), name);
    }

    /** Whether one of these enums or messages, or a type nested in one of the messages, is named {@code name}. */
    private static boolean hasTypeNamed(
        final List<EnumDescriptorProto> enums, final List<DescriptorProto> messages, final String name)
    {
        for (final EnumDescriptorProto enumType : enums)
        {
            if (enumType.getName().equals(name))
            {
                return true;
            }
        }
        for (final DescriptorProto message : messages)
        {
            if (message.getName().equals(name) ||
                hasTypeNamed(message.getEnumTypeList(), message.getNestedTypeList(), name))
            {
                return true;
            }
        }
        return false;
    }
}
