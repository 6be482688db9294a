package io.reverb.bench.cli;

import com.google.protobuf.Descriptors.Descriptor;
import com.google.protobuf.Descriptors.EnumDescriptor;
import com.google.protobuf.Descriptors.EnumValueDescriptor;
import com.google.protobuf.Descriptors.FieldDescriptor;
import com.google.protobuf.Descriptors.GenericDescriptor;
import com.google.protobuf.Descriptors.MethodDescriptor;
import com.google.protobuf.Descriptors.OneofDescriptor;
import com.google.protobuf.Descriptors.ServiceDescriptor;
import java.util.Locale;

/**
 * reverb-cli's {@code describe} text: a symbol's declaration in .proto syntax, after a line saying what it is (as
 * grpcurl prints it). Types are written with their full names and a leading dot; options and comments are left out.
 */
final class Describer
{
    private static final String INDENT = "  ";

    private Describer()
    {
    }

    /**
     * @param symbol a service, method, message or enum.
     * @return its description.
     */
    static String describe(final GenericDescriptor symbol)
    {
        final StringBuilder out = new StringBuilder();
        if (symbol instanceof ServiceDescriptor)
        {
            out.append(symbol.getFullName()).append(" is a service:\n");
            service((ServiceDescriptor)symbol, out);
        }
        else if (symbol instanceof MethodDescriptor)
        {
            out.append(symbol.getFullName()).append(" is a method:\n");
            method((MethodDescriptor)symbol, "", out);
        }
        else if (symbol instanceof Descriptor)
        {
            out.append(symbol.getFullName()).append(" is a message:\n");
            message((Descriptor)symbol, "", out);
        }
        else if (symbol instanceof EnumDescriptor)
        {
            out.append(symbol.getFullName()).append(" is an enum:\n");
            enumType((EnumDescriptor)symbol, "", out);
        }
        else
        {
            out.append(symbol.getFullName()).append('\n');
        }
        return out.toString();
    }

    private static void service(final ServiceDescriptor service, final StringBuilder out)
    {
        out.append("service ").append(service.getName()).append(" {\n");
        for (final MethodDescriptor method : service.getMethods())
        {
            method(method, INDENT, out);
        }
        out.append("}\n");
    }

    private static void method(final MethodDescriptor method, final String indent, final StringBuilder out)
    {
        out.append(indent).append("rpc ").append(method.getName()).append(" ( ")
            .append(method.isClientStreaming() ? "stream " : "").append('.').append(method.getInputType().getFullName())
            .append(" ) returns ( ").append(method.isServerStreaming() ? "stream " : "").append('.')
            .append(method.getOutputType().getFullName()).append(" );\n");
    }

    private static void message(final Descriptor message, final String indent, final StringBuilder out)
    {
        out.append(indent).append("message ").append(message.getName()).append(" {\n");
        final String inner = indent + INDENT;
        for (final FieldDescriptor field : message.getFields())
        {
            final OneofDescriptor oneof = field.getRealContainingOneof();
            if (oneof == null)
            {
                field(field, inner, out);
            }
            else if (oneof.getField(0) == field)
            {
                out.append(inner).append("oneof ").append(oneof.getName()).append(" {\n");
                for (final FieldDescriptor member : oneof.getFields())
                {
                    field(member, inner + INDENT, out);
                }
                out.append(inner).append("}\n");
            }
        }
        for (final Descriptor nested : message.getNestedTypes())
        {
            if (!nested.getOptions().getMapEntry())
            {
                message(nested, inner, out);
            }
        }
        for (final EnumDescriptor nested : message.getEnumTypes())
        {
            enumType(nested, inner, out);
        }
        out.append(indent).append("}\n");
    }

    private static void field(final FieldDescriptor field, final String indent, final StringBuilder out)
    {
        out.append(indent);
        if (field.isMapField())
        {
            final Descriptor entry = field.getMessageType();
            out.append("map<").append(typeName(entry.findFieldByNumber(1))).append(", ")
                .append(typeName(entry.findFieldByNumber(2))).append('>');
        }
        else
        {
            if (field.isRepeated())
            {
                out.append("repeated ");
            }
            else if (field.toProto().getProto3Optional())
            {
                out.append("optional ");
            }
            out.append(typeName(field));
        }
        out.append(' ').append(field.getName()).append(" = ").append(field.getNumber()).append(";\n");
    }

    private static String typeName(final FieldDescriptor field)
    {
        switch (field.getType())
        {
            case MESSAGE:
            case GROUP:
                return "." + field.getMessageType().getFullName();
            case ENUM:
                return "." + field.getEnumType().getFullName();
            default:
                return field.getType().name().toLowerCase(Locale.ROOT);
        }
    }

    private static void enumType(final EnumDescriptor type, final String indent, final StringBuilder out)
    {
        out.append(indent).append("enum ").append(type.getName()).append(" {\n");
        for (final EnumValueDescriptor value : type.getValues())
        {
            out.append(indent).append(INDENT).append(value.getName()).append(" = ").append(value.getNumber())
                .append(";\n");
        }
        out.append(indent).append("}\n");
    }
}
