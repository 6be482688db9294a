package io.reverb.codegen;

import java.util.Set;

/**
 * Java naming rules, written to agree with protoc's Java generator ({@code java/names.cc},
 * {@code java/name_resolver.cc}) so that the names we reference are the names protoc generates.
 */
public final class JavaNames
{
    /**
     * Suffix protoc appends to the default outer class name when a type in the file already has that name.
     */
    public static final String OUTER_CLASS_SUFFIX = "OuterClass";

    /**
     * Java's reserved keywords, the literals and {@code _}: no identifier may be one (JLS 3.8, 3.9).
     */
    public static final Set<String> RESERVED_WORDS = Set.of(
        "abstract", "assert", "boolean", "break", "byte", "case", "catch", "char", "class", "const",
        "continue", "default", "do", "double", "else", "enum", "extends", "final", "finally", "float",
        "for", "goto", "if", "implements", "import", "instanceof", "int", "interface", "long", "native",
        "new", "package", "private", "protected", "public", "return", "short", "static", "strictfp",
        "super", "switch", "synchronized", "this", "throw", "throws", "transient", "try", "void",
        "volatile", "while", "true", "false", "null", "_");

    /**
     * Contextual keywords that are Identifiers but not TypeIdentifiers (JLS 3.8): a package segment or a method
     * may be named {@code record}, a class may not. Generated methods avoid them too: an unqualified call of a
     * method named {@code yield} does not compile, and {@code var} or {@code record} would read badly.
     */
    public static final Set<String> RESTRICTED_TYPE_IDENTIFIERS = Set.of("permits", "record", "sealed", "var", "yield");

    private JavaNames()
    {
    }

    /**
     * protoc's {@code UnderscoresToCamelCase}: drops non-alphanumerics, capitalises the letter after one
     * of them or after a digit, and lower-cases a leading capital unless asked to capitalise it.
     *
     * @param input             a proto identifier or file base name.
     * @param capitaliseFirst   whether the first letter is upper case.
     * @return the camel-case name.
     */
    public static String underscoresToCamelCase(final String input, final boolean capitaliseFirst)
    {
        final StringBuilder result = new StringBuilder(input.length());
        boolean capNextLetter = capitaliseFirst;
        for (int i = 0; i < input.length(); i++)
        {
            final char c = input.charAt(i);
            if (c >= 'a' && c <= 'z')
            {
                result.append(capNextLetter ? (char)(c - 'a' + 'A') : c);
                capNextLetter = false;
            }
            else if (c >= 'A' && c <= 'Z')
            {
                result.append(i == 0 && !capNextLetter ? (char)(c - 'A' + 'a') : c);
                capNextLetter = false;
            }
            else if (c >= '0' && c <= '9')
            {
                result.append(c);
                capNextLetter = true;
            }
            else
            {
                capNextLetter = true;
            }
        }
        return result.toString();
    }

    /**
     * grpc-java's method naming ({@code MixedLower} in its {@code java_generator.cpp}): lower-cases the first
     * character, drops every later underscore and upper-cases the character after one. Unlike
     * {@link #underscoresToCamelCase}, a digit does not capitalise the next letter ({@code Verify2fa} becomes
     * {@code verify2fa}) and a leading underscore stays ({@code _Internal} stays {@code _Internal}). Only ASCII
     * letters change case, as with C's {@code tolower} and {@code toupper}.
     *
     * @param word a proto method name, or {@code get_} + name + {@code _method} for the descriptor accessor.
     * @return the name grpc-java gives the method (before its keyword check).
     */
    public static String mixedLower(final String word)
    {
        if (word.isEmpty())
        {
            return word;
        }
        final StringBuilder result = new StringBuilder(word.length());
        final char first = word.charAt(0);
        result.append(isAsciiUpper(first) ? (char)(first - 'A' + 'a') : first);
        boolean afterUnderscore = false;
        for (int i = 1; i < word.length(); i++)
        {
            final char c = word.charAt(i);
            if (c == '_')
            {
                afterUnderscore = true;
            }
            else
            {
                result.append(afterUnderscore && isAsciiLower(c) ? (char)(c - 'a' + 'A') : c);
                afterUnderscore = false;
            }
        }
        return result.toString();
    }

    /**
     * grpc-java's constant naming: upper case, with an underscore between a lower-case letter and the
     * upper-case letter after it ({@code SayHello} becomes {@code SAY_HELLO}).
     *
     * @param name a proto method name.
     * @return the name in upper snake case.
     */
    public static String upperSnakeCase(final String name)
    {
        final StringBuilder result = new StringBuilder(name.length() + 8);
        for (int i = 0; i < name.length(); i++)
        {
            final char c = name.charAt(i);
            result.append(Character.toUpperCase(c));
            if (i < name.length() - 1 && isAsciiLower(c) && isAsciiUpper(name.charAt(i + 1)))
            {
                result.append('_');
            }
        }
        return result.toString();
    }

    /**
     * The default outer class name protoc gives a file without {@code java_outer_classname}:
     * {@code foo/bar_baz.proto} becomes {@code BarBaz}. The "OuterClass" suffix for a clash is applied
     * by {@link JavaTypeIndex}, which knows the file's types.
     *
     * @param protoFileName the file's name as protoc reports it, e.g. {@code foo/bar_baz.proto}.
     * @return the camel-case base name.
     */
    public static String defaultOuterClassBaseName(final String protoFileName)
    {
        final int lastSlash = protoFileName.lastIndexOf('/');
        String baseName = lastSlash < 0 ? protoFileName : protoFileName.substring(lastSlash + 1);
        if (baseName.endsWith(".protodevel"))
        {
            baseName = baseName.substring(0, baseName.length() - ".protodevel".length());
        }
        else if (baseName.endsWith(".proto"))
        {
            baseName = baseName.substring(0, baseName.length() - ".proto".length());
        }
        return underscoresToCamelCase(baseName, true);
    }

    /**
     * @param name a candidate identifier, e.g. a package name segment.
     * @return true when it is a legal Java Identifier: not reserved, though possibly a contextual keyword.
     */
    public static boolean isValidIdentifier(final String name)
    {
        if (name.isEmpty() || RESERVED_WORDS.contains(name) || !Character.isJavaIdentifierStart(name.charAt(0)))
        {
            return false;
        }
        for (int i = 1; i < name.length(); i++)
        {
            if (!Character.isJavaIdentifierPart(name.charAt(i)))
            {
                return false;
            }
        }
        return true;
    }

    /**
     * @param name a candidate class name.
     * @return true when it is a legal Java TypeIdentifier: an Identifier other than {@link #RESTRICTED_TYPE_IDENTIFIERS}.
     */
    public static boolean isValidTypeIdentifier(final String name)
    {
        return isValidIdentifier(name) && !RESTRICTED_TYPE_IDENTIFIERS.contains(name);
    }

    private static boolean isAsciiLower(final char c)
    {
        return c >= 'a' && c <= 'z';
    }

    private static boolean isAsciiUpper(final char c)
    {
        return c >= 'A' && c <= 'Z';
    }
}
