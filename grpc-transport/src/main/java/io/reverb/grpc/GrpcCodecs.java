package io.reverb.grpc;

import io.grpc.Codec;
import io.grpc.Compressor;
import io.grpc.Decompressor;
import io.grpc.DecompressorRegistry;
import io.reverb.rpc.compression.CodecRegistry;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;

/**
 * grpc-java's compression objects as Reverb codecs: a grpc-java call's {@code Compressor} compresses its Reverb
 * MESSAGE frames (the COMPRESSED flag and the codec's name, so nothing is compressed twice and a native Reverb peer
 * reads them), and a builder's {@code DecompressorRegistry} becomes the Reverb connection's registry.
 */
final class GrpcCodecs
{
    private GrpcCodecs()
    {
    }

    /**
     * @param compressor what grpc-java chose for a call (its {@code CallOptions.withCompression}, or a server call's
     *                   {@code setCompression}).
     * @return the Reverb codec, or null for identity.
     */
    // CHECKSTYLE.OFF: InlineFullyQualifiedName - grpc-java's Codec is imported, Reverb's is spelled out
    static io.reverb.rpc.compression.Codec of(final Compressor compressor)
    {
        if (compressor == null || compressor == Codec.Identity.NONE ||
            CodecRegistry.IDENTITY.equals(compressor.getMessageEncoding()))
        {
            return null;
        }
        return new Outbound(compressor);
    }

    /**
     * @param registry a grpc-java registry.
     * @return a Reverb registry with each of its codecs but identity, and nothing else: as over Netty, a registry
     *         without gzip (e.g. {@code DecompressorRegistry.emptyInstance()}) turns receiving gzip off.
     */
    static CodecRegistry of(final DecompressorRegistry registry)
    {
        CodecRegistry codecs = CodecRegistry.none();
        for (final String name : registry.getKnownMessageEncodings())
        {
            final Decompressor decompressor = registry.lookupDecompressor(name);
            if (decompressor != null && !CodecRegistry.IDENTITY.equals(name))
            {
                codecs = codecs.with(new Inbound(decompressor));
            }
        }
        return codecs;
    }

    /** A grpc-java compressor; decompressing is the registry's business. */
    private static final class Outbound implements io.reverb.rpc.compression.Codec
    {
        private final Compressor compressor;

        Outbound(final Compressor compressor)
        {
            this.compressor = compressor;
        }

        @Override
        public String name()
        {
            return compressor.getMessageEncoding();
        }

        @Override
        public OutputStream compress(final OutputStream out) throws IOException
        {
            return compressor.compress(out);
        }

        @Override
        public InputStream decompress(final InputStream in)
        {
            throw new UnsupportedOperationException("a grpc-java Compressor only compresses: " + name());
        }
    }

    /** A grpc-java decompressor (a {@code Codec} compresses too). */
    private static final class Inbound implements io.reverb.rpc.compression.Codec
    {
        private final Decompressor decompressor;

        Inbound(final Decompressor decompressor)
        {
            this.decompressor = decompressor;
        }

        @Override
        public String name()
        {
            return decompressor.getMessageEncoding();
        }

        @Override
        public OutputStream compress(final OutputStream out) throws IOException
        {
            if (decompressor instanceof Compressor)
            {
                return ((Compressor)decompressor).compress(out);
            }
            throw new UnsupportedOperationException("a grpc-java Decompressor only decompresses: " + name());
        }

        @Override
        public InputStream decompress(final InputStream in) throws IOException
        {
            return decompressor.decompress(in);
        }
    }
    // CHECKSTYLE.ON: InlineFullyQualifiedName
}
