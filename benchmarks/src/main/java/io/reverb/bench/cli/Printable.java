package io.reverb.bench.cli;

/**
 * Text from a server made safe for a terminal: names, descriptions and error messages that a hostile server chose
 * could otherwise carry escape sequences (move the cursor, rewrite earlier lines, set the window title, hide text)
 * or forge whole lines. Every control character (C0 but the allowed layout characters, DEL, C1) and every Unicode
 * bidirectional override is written as {@code \}{@code uXXXX}, which is also a valid escape inside a JSON string, so
 * JSON output stays JSON.
 */
public final class Printable
{
    private Printable()
    {
    }

    /**
     * @param text multi-line text (a description, an error, a JSON document); null prints as {@code null}.
     * @return it with newlines and tabs kept and every other control character escaped.
     */
    public static String text(final String text)
    {
        return escape(text, true);
    }

    /**
     * @param name one name on one line (a service, a file); null prints as {@code null}.
     * @return it with every control character escaped, newlines and tabs included, so that it cannot forge a line.
     */
    public static String name(final String name)
    {
        return escape(name, false);
    }

    private static String escape(final String text, final boolean layout)
    {
        if (text == null)
        {
            return "null";
        }
        StringBuilder out = null;
        for (int i = 0; i < text.length(); i++)
        {
            final char c = text.charAt(i);
            final boolean keep = !unsafe(c) || layout && (c == '\n' || c == '\t');
            if (keep)
            {
                if (out != null)
                {
                    out.append(c);
                }
                continue;
            }
            if (out == null)
            {
                out = new StringBuilder(text.length() + 16).append(text, 0, i);
            }
            out.append(String.format("\\u%04x", (int)c));
        }
        return out == null ? text : out.toString();
    }

    /**
     * @param c a character.
     * @return whether a terminal may act on it rather than show it: C0 controls, DEL, C1 controls (CSI is 0x9b),
     *         and the bidirectional marks, embeddings, overrides and isolates (which reorder what is shown).
     */
    static boolean unsafe(final char c)
    {
        return c < 0x20 || c >= 0x7f && c <= 0x9f || c >= 0x202a && c <= 0x202e || c >= 0x2066 && c <= 0x2069 ||
            c == 0x200e || c == 0x200f || c == 0x061c;
    }
}
