package io.reverb.rpc.compression;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.util.zip.GZIPInputStream;
import java.util.zip.GZIPOutputStream;

/**
 * gzip (RFC 1952), built into every Reverb peer that speaks engine protocol v3 or later: a sender may always use it.
 * The JDK's {@code java.util.zip}, default compression level.
 */
public final class GzipCodec implements Codec
{
    /** The codec's name on the wire, as gRPC's. */
    public static final String NAME = "gzip";
    /** The one instance. */
    public static final GzipCodec INSTANCE = new GzipCodec();

    private GzipCodec()
    {
    }

    @Override
    public String name()
    {
        return NAME;
    }

    @Override
    public OutputStream compress(final OutputStream out) throws IOException
    {
        return new GZIPOutputStream(out, 8192);
    }

    @Override
    public InputStream decompress(final InputStream in) throws IOException
    {
        return new GZIPInputStream(in, 8192);
    }

    @Override
    public String toString()
    {
        return NAME;
    }
}
