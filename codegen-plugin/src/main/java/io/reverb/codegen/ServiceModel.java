package io.reverb.codegen;

import com.google.protobuf.DescriptorProtos.FileDescriptorProto;
import com.google.protobuf.DescriptorProtos.MethodDescriptorProto;
import com.google.protobuf.DescriptorProtos.ServiceDescriptorProto;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Everything the writer needs about one service, with every Java name decided and checked. Building it
 * is where a proto the plugin cannot handle is rejected, naming the file and element.
 *
 * @param protoFile    the .proto file declaring the service.
 * @param fullName     the proto full name, e.g. {@code helloworld.Greeter}: the value of {@code SERVICE_NAME}.
 * @param javaPackage  the Java package of the generated class (may be empty).
 * @param rpcClassName {@code GreeterRpc}.
 * @param stubClassName {@code GreeterReactorStub}.
 * @param implBaseClassName {@code GreeterImplBase}.
 * @param deprecated   the service's {@code deprecated} option.
 * @param namesDeprecatedClasses whether a request or response type is (or is nested in) a message class protoc marks
 *                     {@code @java.lang.Deprecated}: the generated class then suppresses deprecation warnings.
 * @param comment      the service's comment lines.
 * @param methods      the methods, in declaration order.
 * @param outerClassName fully qualified Java outer class protoc generates for {@code protoFile}: its
 *                     {@code getDescriptor()} gives the file's descriptor, which the service definition carries.
 * @param protoName    the service's simple name in the proto, e.g. {@code Greeter}.
 */
public record ServiceModel(
    String protoFile,
    String fullName,
    String javaPackage,
    String rpcClassName,
    String stubClassName,
    String implBaseClassName,
    boolean deprecated,
    boolean namesDeprecatedClasses,
    List<String> comment,
    List<Method> methods,
    String outerClassName,
    String protoName)
{
    /** Members of {@link Object}: a generated method of the same name would clash or confuse. */
    static final Set<String> OBJECT_METHODS = Set.of(
        "getClass", "hashCode", "equals", "clone", "toString", "notify", "notifyAll", "wait", "finalize");

    /** Members the generated stub and service base inherit from rpc-core's {@code AbstractReactorStub} and {@code RpcService}. */
    static final Set<String> INHERITED_MEMBERS = Set.of(
        "withDeadlineAfter", "withMetadata", "withWaitForReady", "withCompression", "withCallOptions", "channel",
        "callOptions", "build", "bindService");

    /**
     * One rpc of the service.
     *
     * @param protoName    the name in the proto, e.g. {@code SayHello}: the method part of the full method name.
     * @param javaName     the stub and service-base method, e.g. {@code sayHello} ({@code getClass_} on a clash).
     * @param accessorName the static descriptor accessor, e.g. {@code getSayHelloMethod}.
     * @param constantName the static descriptor constant, e.g. {@code METHOD_SAY_HELLO}.
     * @param requestType  fully qualified Java class of the request.
     * @param responseType fully qualified Java class of the response.
     * @param kind         the call shape.
     * @param deprecated   the method's {@code deprecated} option.
     * @param comment      the method's comment lines.
     */
    public record Method(
        String protoName,
        String javaName,
        String accessorName,
        String constantName,
        String requestType,
        String responseType,
        MethodKind kind,
        boolean deprecated,
        List<String> comment)
    {
    }

    /**
     * Decides the Java names for a service and checks that they are usable.
     *
     * @param file         the file declaring the service.
     * @param serviceIndex the service's index in the file (for its comments).
     * @param types        where every message of the request lives in Java.
     * @return the model.
     * @throws GenerationException when a name cannot be made valid Java or two names clash.
     */
    public static ServiceModel of(final FileDescriptorProto file, final int serviceIndex, final JavaTypeIndex types)
    {
        final ServiceDescriptorProto service = file.getService(serviceIndex);
        final String fullName = file.getPackage().isEmpty() ? service.getName() : file.getPackage() + "." + service.getName();
        final String element = "service " + fullName;
        final String javaPackage = JavaTypeIndex.javaPackage(file);
        checkJavaPackage(file.getName(), element, javaPackage);

        final String rpcClassName = service.getName() + "Rpc";
        final String qualifiedRpcClassName = javaPackage.isEmpty() ? rpcClassName : javaPackage + "." + rpcClassName;
        final String clashingFile = types.fileGeneratingTopLevelClass(qualifiedRpcClassName);
        if (null != clashingFile)
        {
            throw new GenerationException(file.getName(), element, "the generated class " + qualifiedRpcClassName +
                " would have the name of a class protoc generates for " + clashingFile +
                " (its outer class, or a message or enum with java_multiple_files); rename the service or that type," +
                " or set option java_outer_classname");
        }

        final List<Method> methods = new ArrayList<>();
        boolean namesDeprecatedClasses = false;
        final Map<String, String> usedJavaNames = new HashMap<>();
        final Map<String, String> usedConstantNames = new HashMap<>();
        final Map<String, String> usedAccessorNames = new HashMap<>();
        for (int i = 0; i < service.getMethodCount(); i++)
        {
            final MethodDescriptorProto method = service.getMethod(i);
            final String methodElement = element + ", method " + method.getName();
            final Method model = methodOf(file, serviceIndex, i, method, methodElement, types);
            claim(usedJavaNames, model.javaName(), method.getName(), file.getName(), methodElement);
            claim(usedConstantNames, model.constantName(), method.getName(), file.getName(), methodElement);
            claim(usedAccessorNames, model.accessorName(), method.getName(), file.getName(), methodElement);
            methods.add(model);
            namesDeprecatedClasses |= types.namesDeprecatedClass(method.getInputType()) ||
                types.namesDeprecatedClass(method.getOutputType());
        }

        return new ServiceModel(
            file.getName(),
            fullName,
            javaPackage,
            rpcClassName,
            service.getName() + "ReactorStub",
            service.getName() + "ImplBase",
            service.getOptions().getDeprecated(),
            namesDeprecatedClasses,
            Javadoc.commentLines(file.getSourceCodeInfo(), Javadoc.FILE_SERVICE_FIELD, serviceIndex),
            List.copyOf(methods),
            javaPackage.isEmpty() ? JavaTypeIndex.outerClassName(file) :
                javaPackage + "." + JavaTypeIndex.outerClassName(file),
            service.getName());
    }

    /**
     * @return the Java file the class goes into, relative to the output root, e.g. {@code pkg/GreeterRpc.java}.
     */
    public String outputFileName()
    {
        final String directory = javaPackage.isEmpty() ? "" : javaPackage.replace('.', '/') + "/";
        return directory + rpcClassName + ".java";
    }

    private static Method methodOf(
        final FileDescriptorProto file,
        final int serviceIndex,
        final int methodIndex,
        final MethodDescriptorProto method,
        final String element,
        final JavaTypeIndex types)
    {
        // grpc-java's names (MixedLower), so code written against its stubs names the same methods
        String javaName = JavaNames.mixedLower(method.getName());
        if (javaName.isEmpty() || !Character.isJavaIdentifierStart(javaName.charAt(0)))
        {
            javaName = "_" + javaName;
        }
        if (JavaNames.RESERVED_WORDS.contains(javaName) || JavaNames.RESTRICTED_TYPE_IDENTIFIERS.contains(javaName) ||
            OBJECT_METHODS.contains(javaName) || INHERITED_MEMBERS.contains(javaName))
        {
            javaName = javaName + "_";
        }

        return new Method(
            method.getName(),
            javaName,
            JavaNames.mixedLower("get_" + method.getName() + "_method"),
            "METHOD_" + JavaNames.upperSnakeCase(method.getName()),
            javaType(file, element, "input", method.getInputType(), types),
            javaType(file, element, "output", method.getOutputType(), types),
            MethodKind.of(method.getClientStreaming(), method.getServerStreaming()),
            method.getOptions().getDeprecated(),
            Javadoc.commentLines(
                file.getSourceCodeInfo(), Javadoc.FILE_SERVICE_FIELD, serviceIndex, Javadoc.SERVICE_METHOD_FIELD, methodIndex));
    }

    private static String javaType(
        final FileDescriptorProto file, final String element, final String role, final String protoType,
        final JavaTypeIndex types)
    {
        final String javaType = types.javaClassName(protoType);
        if (null == javaType)
        {
            throw new GenerationException(file.getName(), element, "the " + role + " type " + protoType +
                " is not a message defined in any file protoc passed to the plugin");
        }
        final String javaPackage = types.javaPackageOf(protoType);
        final String invalid = invalidSegment(javaPackage,
            javaPackage.isEmpty() ? javaType : javaType.substring(javaPackage.length() + 1));
        if (null != invalid)
        {
            throw new GenerationException(file.getName(), element, "the " + role + " type " + protoType +
                " maps to the Java class " + javaType + ", which is not a valid Java name ('" + invalid +
                "'); set option java_package in " + types.definingFile(protoType) + " or rename the type");
        }
        return javaType;
    }

    private static void checkJavaPackage(final String protoFile, final String element, final String javaPackage)
    {
        final String invalid = invalidSegment(javaPackage, "");
        if (null != invalid)
        {
            throw new GenerationException(protoFile, element, "the Java package '" + javaPackage +
                "' is not valid Java ('" + invalid + "'); set option java_package");
        }
    }

    /**
     * The package's segments must be Identifiers, the class names TypeIdentifiers (JLS 7.4.1, 8.1): a package
     * may be {@code acme.record.v1}, a class may not be {@code record}.
     *
     * @param javaPackage a Java package, possibly empty.
     * @param classPath   a class name in it, with the names of enclosing classes, e.g. {@code Outer.Msg}; or empty.
     * @return the first segment Java rejects, or null.
     */
    private static String invalidSegment(final String javaPackage, final String classPath)
    {
        if (!javaPackage.isEmpty())
        {
            for (final String segment : javaPackage.split("\\.", -1))
            {
                if (!JavaNames.isValidIdentifier(segment))
                {
                    return segment;
                }
            }
        }
        if (!classPath.isEmpty())
        {
            for (final String segment : classPath.split("\\.", -1))
            {
                if (!JavaNames.isValidTypeIdentifier(segment))
                {
                    return segment;
                }
            }
        }
        return null;
    }

    private static void claim(
        final Map<String, String> used, final String javaName, final String protoName, final String protoFile,
        final String element)
    {
        final String previous = used.putIfAbsent(javaName, protoName);
        if (null != previous)
        {
            throw new GenerationException(protoFile, element, "its Java name " + javaName +
                " is also the Java name of method " + previous + "; rename one of them");
        }
    }
}
