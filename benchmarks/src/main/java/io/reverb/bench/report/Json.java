package io.reverb.bench.report;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The little JSON the reports need: a writer for strings and a parser into maps, lists,
 * strings, doubles, booleans and null. Kept here so the CLI carries no JSON library.
 */
public final class Json
{
    private final String text;
    private int pos;

    private Json(final String text)
    {
        this.text = text;
    }

    /**
     * @param value a string.
     * @return it as a quoted JSON string.
     */
    public static String quote(final String value)
    {
        if (value == null)
        {
            return "null";
        }
        final StringBuilder out = new StringBuilder(value.length() + 2).append('"');
        for (int i = 0; i < value.length(); i++)
        {
            final char c = value.charAt(i);
            switch (c)
            {
                case '"' -> out.append("\\\"");
                case '\\' -> out.append("\\\\");
                case '\n' -> out.append("\\n");
                case '\r' -> out.append("\\r");
                case '\t' -> out.append("\\t");
                default ->
                {
                    if (c < 0x20 || c == '<' || c == '>')
                    {
                        // '<' and '>' escaped too, so the text can sit inside an HTML <script>.
                        out.append(String.format("\\u%04x", (int)c));
                    }
                    else
                    {
                        out.append(c);
                    }
                }
            }
        }
        return out.append('"').toString();
    }

    /**
     * @param value a number.
     * @return it as JSON ({@code null} for NaN or infinity, which JSON lacks).
     */
    public static String number(final double value)
    {
        if (Double.isNaN(value) || Double.isInfinite(value))
        {
            return "null";
        }
        if (value == Math.rint(value) && Math.abs(value) < 1e15)
        {
            return Long.toString((long)value);
        }
        return Double.toString(value);
    }

    /**
     * @param text a JSON document.
     * @return the parsed value: {@code Map<String,Object>}, {@code List<Object>}, String, Double, Boolean or null.
     * @throws IllegalArgumentException if the text is not JSON.
     */
    public static Object parse(final String text)
    {
        final Json parser = new Json(text);
        final Object value = parser.value();
        parser.skipSpace();
        if (parser.pos != text.length())
        {
            throw parser.error("trailing characters");
        }
        return value;
    }

    private Object value()
    {
        skipSpace();
        if (pos >= text.length())
        {
            throw error("unexpected end");
        }
        final char c = text.charAt(pos);
        return switch (c)
        {
            case '{' -> object();
            case '[' -> array();
            case '"' -> string();
            case 't' -> literal("true", Boolean.TRUE);
            case 'f' -> literal("false", Boolean.FALSE);
            case 'n' -> literal("null", null);
            default -> number();
        };
    }

    private Map<String, Object> object()
    {
        final Map<String, Object> map = new LinkedHashMap<>();
        pos++;
        skipSpace();
        if (peek() == '}')
        {
            pos++;
            return map;
        }
        while (true)
        {
            skipSpace();
            final String key = string();
            skipSpace();
            expect(':');
            map.put(key, value());
            skipSpace();
            if (peek() == ',')
            {
                pos++;
                continue;
            }
            expect('}');
            return map;
        }
    }

    private List<Object> array()
    {
        final List<Object> list = new ArrayList<>();
        pos++;
        skipSpace();
        if (peek() == ']')
        {
            pos++;
            return list;
        }
        while (true)
        {
            list.add(value());
            skipSpace();
            if (peek() == ',')
            {
                pos++;
                continue;
            }
            expect(']');
            return list;
        }
    }

    private String string()
    {
        expect('"');
        final StringBuilder out = new StringBuilder();
        while (pos < text.length())
        {
            final char c = text.charAt(pos++);
            if (c == '"')
            {
                return out.toString();
            }
            if (c != '\\')
            {
                out.append(c);
                continue;
            }
            final char e = text.charAt(pos++);
            switch (e)
            {
                case 'n' -> out.append('\n');
                case 'r' -> out.append('\r');
                case 't' -> out.append('\t');
                case 'b' -> out.append('\b');
                case 'f' -> out.append('\f');
                case 'u' ->
                {
                    out.append((char)Integer.parseInt(text.substring(pos, pos + 4), 16));
                    pos += 4;
                }
                default -> out.append(e);
            }
        }
        throw error("unterminated string");
    }

    private Double number()
    {
        final int start = pos;
        while (pos < text.length() && "+-0123456789.eE".indexOf(text.charAt(pos)) >= 0)
        {
            pos++;
        }
        try
        {
            return Double.valueOf(text.substring(start, pos));
        }
        catch (final NumberFormatException ex)
        {
            throw error("not a value");
        }
    }

    private Object literal(final String word, final Object value)
    {
        if (!text.startsWith(word, pos))
        {
            throw error("not a value");
        }
        pos += word.length();
        return value;
    }

    private void expect(final char c)
    {
        if (peek() != c)
        {
            throw error("expected '" + c + "'");
        }
        pos++;
    }

    private char peek()
    {
        return pos < text.length() ? text.charAt(pos) : '\0';
    }

    private void skipSpace()
    {
        while (pos < text.length() && Character.isWhitespace(text.charAt(pos)))
        {
            pos++;
        }
    }

    private IllegalArgumentException error(final String what)
    {
        return new IllegalArgumentException("bad JSON at offset " + pos + ": " + what);
    }
}
