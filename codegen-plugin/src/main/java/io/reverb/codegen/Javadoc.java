package io.reverb.codegen;

import com.google.protobuf.DescriptorProtos.SourceCodeInfo;
import com.google.protobuf.DescriptorProtos.SourceCodeInfo.Location;

import java.util.ArrayList;
import java.util.List;

/**
 * Carries proto comments into javadoc without letting them break out of it.
 */
public final class Javadoc
{
    /** {@code FileDescriptorProto.service} field number, the first element of a service's source path. */
    static final int FILE_SERVICE_FIELD = 6;
    /** {@code ServiceDescriptorProto.method} field number. */
    static final int SERVICE_METHOD_FIELD = 2;

    private Javadoc()
    {
    }

    /**
     * Escapes text for a javadoc body: HTML specials become entities, {@code @} cannot start a tag, a
     * {@code *}{@code /} cannot close the comment, and a backslash cannot start a unicode escape (javac
     * translates those even inside comments).
     *
     * @param text raw comment text.
     * @return text safe inside {@code /** ... *}{@code /}.
     */
    public static String escape(final String text)
    {
        final StringBuilder result = new StringBuilder(text.length() + 16);
        for (int i = 0; i < text.length(); i++)
        {
            final char c = text.charAt(i);
            switch (c)
            {
                case '&' -> result.append("&amp;");
                case '<' -> result.append("&lt;");
                case '>' -> result.append("&gt;");
                case '@' -> result.append("&#64;");
                case '\\' -> result.append("&#92;");
                case '/' -> result.append(i > 0 && text.charAt(i - 1) == '*' ? "&#47;" : "/");
                default -> result.append(c);
            }
        }
        return result.toString();
    }

    /**
     * @param info the file's source info (empty when protoc was not asked to keep it).
     * @param path the element's path, e.g. {@code [6, 0, 2, 1]} for the second method of the first service.
     * @return the element's leading comment (or else its trailing comment) as lines, or an empty list.
     */
    public static List<String> commentLines(final SourceCodeInfo info, final int... path)
    {
        for (final Location location : info.getLocationList())
        {
            if (pathEquals(location, path))
            {
                String comment = location.getLeadingComments();
                if (comment.isBlank())
                {
                    comment = location.getTrailingComments();
                }
                return toLines(comment);
            }
        }
        return List.of();
    }

    private static List<String> toLines(final String comment)
    {
        final List<String> lines = new ArrayList<>();
        for (final String line : comment.split("\r\n|\r|\n", -1))
        {
            lines.add((line.startsWith(" ") ? line.substring(1) : line).stripTrailing());
        }
        while (!lines.isEmpty() && lines.get(lines.size() - 1).isEmpty())
        {
            lines.remove(lines.size() - 1);
        }
        while (!lines.isEmpty() && lines.get(0).isEmpty())
        {
            lines.remove(0);
        }
        return lines;
    }

    private static boolean pathEquals(final Location location, final int[] path)
    {
        if (location.getPathCount() != path.length)
        {
            return false;
        }
        for (int i = 0; i < path.length; i++)
        {
            if (location.getPath(i) != path[i])
            {
                return false;
            }
        }
        return true;
    }
}
