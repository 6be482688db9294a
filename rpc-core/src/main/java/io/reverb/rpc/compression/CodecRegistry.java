package io.reverb.rpc.compression;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

/**
 * The codecs a channel or a server can compress with and decompress, by name (grpc-java's
 * {@code CompressorRegistry} and {@code DecompressorRegistry} in one). Immutable: {@link #with(Codec)} returns a
 * copy. {@link #defaults()} holds gzip; {@link #none()} holds nothing, for a side that must not inflate what peers
 * send (a message compressed with a codec the registry lacks fails its call, before any byte of it is inflated);
 * {@code "identity"} (no compression) is understood by every registry and never held.
 */
public final class CodecRegistry
{
    /** The name that means "no compression", as gRPC's. */
    public static final String IDENTITY = "identity";
    private static final CodecRegistry DEFAULTS = new CodecRegistry(Map.of(GzipCodec.NAME, GzipCodec.INSTANCE));
    private static final CodecRegistry NONE = new CodecRegistry(Map.of());

    private final Map<String, Codec> codecs;

    private CodecRegistry(final Map<String, Codec> codecs)
    {
        this.codecs = codecs;
    }

    /**
     * @return the registry every channel and server starts with: gzip.
     */
    public static CodecRegistry defaults()
    {
        return DEFAULTS;
    }

    /**
     * @return a registry without codecs, gzip included: this side neither compresses nor accepts compressed messages
     *         (a server answers a compressed request UNIMPLEMENTED, a client fails a compressed response INTERNAL).
     */
    public static CodecRegistry none()
    {
        return NONE;
    }

    /**
     * @param name a codec name, e.g. {@code "gzip"}.
     * @return a copy without that codec (this registry itself if it has none of that name).
     */
    public CodecRegistry without(final String name)
    {
        if (!codecs.containsKey(name))
        {
            return this;
        }
        final Map<String, Codec> copy = new LinkedHashMap<>(codecs);
        copy.remove(name);
        return new CodecRegistry(Map.copyOf(copy));
    }

    /**
     * @param codec a codec; replaces one of the same name.
     * @return a copy that holds it too.
     * @throws IllegalArgumentException if its name is not a valid codec name, or is "identity".
     */
    public CodecRegistry with(final Codec codec)
    {
        final String name = checkName(Objects.requireNonNull(codec, "codec").name());
        if (IDENTITY.equals(name))
        {
            throw new IllegalArgumentException("\"identity\" means no compression: it is not a codec to register");
        }
        final Map<String, Codec> copy = new LinkedHashMap<>(codecs);
        copy.put(name, codec);
        return new CodecRegistry(Map.copyOf(copy));
    }

    /**
     * @param name a codec name.
     * @return the codec, or null if this registry has none of that name (and for "identity").
     */
    public Codec lookup(final String name)
    {
        return codecs.get(name);
    }

    /**
     * Checks a builder's default codec ({@code compression(name)} of a channel or server) against this registry.
     *
     * @param name a codec name, or "identity" or null for none.
     * @return the name, or null for none.
     * @throws IllegalArgumentException if this registry has no codec of that name.
     */
    public String defaultCodec(final String name)
    {
        if (name == null || IDENTITY.equals(name))
        {
            return null;
        }
        if (lookup(name) == null)
        {
            throw new IllegalArgumentException("no codec \"" + name + "\" in " + this +
                " (register it with codecRegistry(CodecRegistry.defaults().with(codec)) first)");
        }
        return name;
    }

    /**
     * @return the names of the codecs held.
     */
    public Set<String> names()
    {
        return codecs.keySet();
    }

    /**
     * @param name a codec name.
     * @return the name, if valid on the wire.
     * @throws IllegalArgumentException if it is empty, longer than 255 characters or not of {@code [a-z0-9._-]}.
     */
    public static String checkName(final String name)
    {
        Objects.requireNonNull(name, "codec name");
        boolean valid = !name.isEmpty() && name.length() <= 255;
        for (int i = 0; valid && i < name.length(); i++)
        {
            final char c = name.charAt(i);
            valid = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
        }
        if (!valid)
        {
            throw new IllegalArgumentException("invalid codec name \"" + name +
                "\": 1 to 255 characters of a-z, 0-9, '.', '_', '-'");
        }
        return name;
    }

    @Override
    public String toString()
    {
        return "CodecRegistry" + codecs.keySet();
    }
}
