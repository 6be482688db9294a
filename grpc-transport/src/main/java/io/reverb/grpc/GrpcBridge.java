package io.reverb.grpc;

import io.grpc.InternalMetadata;
import io.grpc.Status;
import io.grpc.internal.ClientStreamListener.RpcProgress;
import io.grpc.internal.GrpcUtil;
import io.reverb.rpc.Metadata;
import io.reverb.rpc.MethodDescriptor;
import io.reverb.rpc.RpcException;
import io.reverb.rpc.retry.AttemptFailure;
import io.reverb.rpc.retry.CallFailureCause;

import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Converts between grpc-java's and Reverb's status and metadata. Both carry the same 17 status codes with the same
 * numbers, and metadata as (lower-case name, value) pairs with binary values under {@code -bin} names, so the
 * conversion is a copy of the serialized pairs.
 */
final class GrpcBridge
{
    /**
     * The request metadata name under which a grpc-java client over Reverb sends a call's authority (what HTTP/2 sends
     * as {@code :authority}) when the server cannot tell it by itself (see {@link ReverbClientTransport}). Reserved to
     * this bridge: a client application's entry of that name is dropped ({@link #toReverb}), and the server takes it
     * out of the headers before grpc-java sees them ({@link #serverHeaders}, {@link #authorityOf}).
     */
    static final String AUTHORITY = "reverb-authority";

    // CHECKSTYLE.OFF: InlineFullyQualifiedName - this class converts between same-named types of both libraries:
    // grpc-java's Status and Reverb's Metadata and MethodDescriptor are imported, their counterparts are spelled out
    private static final io.grpc.Metadata.Key<?>[] TRANSPORT_OWNED_KEYS = {
        GrpcUtil.MESSAGE_ACCEPT_ENCODING_KEY, GrpcUtil.MESSAGE_ENCODING_KEY, GrpcUtil.TIMEOUT_KEY,
        GrpcUtil.CONTENT_TYPE_KEY, GrpcUtil.TE_HEADER, GrpcUtil.USER_AGENT_KEY,
        io.grpc.Metadata.Key.of(AUTHORITY, io.grpc.Metadata.ASCII_STRING_MARSHALLER)
    };

    private static final byte[] ACCEPT_ENCODING_NAME = GrpcUtil.MESSAGE_ACCEPT_ENCODING.getBytes(StandardCharsets.US_ASCII);

    private GrpcBridge()
    {
    }

    /**
     * @param name a grpc metadata name.
     * @return true for names that grpc-java's HTTP/2 transports own and Reverb's wire carries by other means
     * (deadline in the CALL frame, no compression), that make no sense on it, or that the transport sets itself
     * whatever the application put there ({@code user-agent}, as Netty's transport replaces it; {@link #AUTHORITY}).
     */
    private static boolean transportOwned(final String name)
    {
        switch (name)
        {
            case "grpc-timeout":
            case "grpc-encoding":
            case "grpc-accept-encoding":
            case "content-type":
            case "te":
            case "user-agent":
            case AUTHORITY:
                return true;
            default:
                return false;
        }
    }

    private static final byte[] GZIP = "gzip".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] IDENTITY = "identity".getBytes(StandardCharsets.US_ASCII);

    /**
     * A grpc-java call's request headers for the Reverb wire: {@link #toReverb}, and its {@code grpc-accept-encoding}
     * kept unless it is grpc-java's default ({@code gzip}, which the server side assumes when none comes,
     * {@link #serverHeaders}). A channel that decompresses nothing sends none, and is then said to accept
     * {@code identity} only: the server must not compress for it (over Netty it does not either).
     *
     * @param grpc the call's headers.
     * @return Reverb metadata, or null when nothing is left (the common case).
     */
    static Metadata requestHeaders(final io.grpc.Metadata grpc)
    {
        final byte[] accepted = grpc == null ? null : grpc.get(GrpcUtil.MESSAGE_ACCEPT_ENCODING_KEY);
        final Metadata reverb = toReverb(grpc);
        if (accepted != null && Arrays.equals(accepted, GZIP))
        {
            return reverb;
        }
        final Metadata carried = reverb != null ? reverb : new Metadata();
        carried.putRaw(GrpcUtil.MESSAGE_ACCEPT_ENCODING, accepted != null ? accepted : IDENTITY);
        return carried;
    }

    /**
     * @param grpc grpc-java metadata, or null.
     * @return the same entries as Reverb metadata (transport-owned names dropped), or null when none is left (the
     * common case: most calls carry nothing but what grpc-java's call layers add, and then no object is made).
     */
    static Metadata toReverb(final io.grpc.Metadata grpc)
    {
        if (grpc == null || onlyTransportOwned(grpc))
        {
            return null;
        }
        Metadata reverb = null;
        final byte[][] pairs = InternalMetadata.serialize(grpc);
        for (int i = 0; i + 1 < pairs.length; i += 2)
        {
            final String name = new String(pairs[i], StandardCharsets.US_ASCII);
            if (!transportOwned(name))
            {
                if (reverb == null)
                {
                    reverb = new Metadata();
                }
                reverb.putRaw(name, pairs[i + 1]);
            }
        }
        return reverb;
    }

    /**
     * @param grpc grpc-java metadata.
     * @return true when it holds nothing but what grpc-java's call layers add to every call (encodings, the common
     * case), checked without serializing it.
     */
    private static boolean onlyTransportOwned(final io.grpc.Metadata grpc)
    {
        final int count = InternalMetadata.headerCount(grpc);
        if (count == 0)
        {
            return true;
        }
        if (count > TRANSPORT_OWNED_KEYS.length)
        {
            return false;
        }
        int owned = 0;
        // the common ones first: a call's metadata is usually grpc-accept-encoding alone
        for (final io.grpc.Metadata.Key<?> key : TRANSPORT_OWNED_KEYS)
        {
            if (grpc.containsKey(key) && ++owned == count)
            {
                return true;
            }
        }
        return false;
    }

    /**
     * @param reverb Reverb metadata, or null.
     * @return the same entries as grpc-java metadata.
     */
    static io.grpc.Metadata toGrpc(final Metadata reverb)
    {
        if (reverb == null || reverb.isEmpty())
        {
            return new io.grpc.Metadata();
        }
        final int n = reverb.size();
        final List<byte[]> pairs = new ArrayList<>(2 * n);
        for (int i = 0; i < n; i++)
        {
            pairs.add(reverb.nameAt(i).getBytes(StandardCharsets.US_ASCII));
            pairs.add(reverb.valueAt(i));
        }
        return InternalMetadata.newMetadata(pairs.toArray(new byte[0][]));
    }

    /**
     * @param reverb a call's request metadata, or null.
     * @return the authority the client sent under {@link #AUTHORITY}, or null when it sent none.
     */
    static String authorityOf(final Metadata reverb)
    {
        final int n = reverb == null ? 0 : reverb.size();
        for (int i = 0; i < n; i++)
        {
            if (AUTHORITY.equals(reverb.nameAt(i)))
            {
                return new String(reverb.valueAt(i), StandardCharsets.US_ASCII);
            }
        }
        return null;
    }

    /**
     * The headers a grpc-java server sees for a call over Reverb: the call's metadata without {@code grpc-timeout} (the
     * deadline travels in the CALL frame; a peer's metadata must not pose as grpc-java's header) and without
     * {@link #AUTHORITY} (the stream's authority, {@code ServerCall.getAuthority()}, as HTTP/2's {@code :authority} is
     * no header either), with
     * {@code grpc-accept-encoding: gzip} when the client named no accepted encodings (every Reverb client decompresses
     * gzip, and grpc-java's {@code ServerCall.setCompression} compresses only for a client that says it accepts the
     * codec). Built in one go: no metadata grown and searched afterwards.
     *
     * @param reverb the call's metadata, or null.
     * @param gzip   the value {@code gzip} in ASCII.
     * @return grpc-java metadata of its own (grpc-java may change it).
     */
    static io.grpc.Metadata serverHeaders(final Metadata reverb, final byte[] gzip)
    {
        final int n = reverb == null ? 0 : reverb.size();
        final byte[][] pairs = new byte[2 * (n + 1)][];
        int at = 0;
        boolean acceptEncoding = false;
        for (int i = 0; i < n; i++)
        {
            final String name = reverb.nameAt(i);
            if (GrpcUtil.TIMEOUT.equals(name) || AUTHORITY.equals(name))
            {
                continue;
            }
            acceptEncoding |= GrpcUtil.MESSAGE_ACCEPT_ENCODING.equals(name);
            pairs[at++] = name.getBytes(StandardCharsets.US_ASCII);
            pairs[at++] = reverb.valueAt(i);
        }
        if (!acceptEncoding)
        {
            pairs[at++] = ACCEPT_ENCODING_NAME;
            pairs[at++] = gzip;
        }
        return InternalMetadata.newMetadata(at / 2, pairs); // pairs in use; the rest is spare capacity
    }

    /**
     * @param status a grpc-java status.
     * @return the Reverb status with the same code, description and cause.
     */
    static io.reverb.rpc.Status toReverb(final Status status)
    {
        io.reverb.rpc.Status reverb = io.reverb.rpc.Status.fromCodeValue(status.getCode().value());
        if (status.getDescription() != null)
        {
            reverb = reverb.withDescription(status.getDescription());
        }
        if (status.getCause() != null)
        {
            reverb = reverb.withCause(status.getCause());
        }
        return reverb;
    }

    /**
     * @param status a Reverb status.
     * @return the grpc-java status with the same code, description and cause.
     */
    static Status toGrpc(final io.reverb.rpc.Status status)
    {
        Status grpc = Status.fromCodeValue(status.code().value());
        if (status.description() != null)
        {
            grpc = grpc.withDescription(status.description());
        }
        if (status.cause() != null)
        {
            grpc = grpc.withCause(status.cause());
        }
        return grpc;
    }

    /**
     * @param t how a Reverb call failed.
     * @return its status as grpc-java's.
     */
    static Status statusOf(final Throwable t)
    {
        return toGrpc(io.reverb.rpc.Status.fromThrowable(t));
    }

    /**
     * How far a failed Reverb call got, as grpc-java's transport reports it: a call the server refused before any
     * handler ran (GOAWAY, refused while shutting down) is REFUSED, so
     * that grpc-java's transparent retry sends it again on another transport; a call that never left this client is
     * MISCARRIED (retried transparently without grpc-java's once-only limit); any other failure was PROCESSED.
     *
     * @param t how a Reverb call failed.
     * @return its progress.
     */
    static RpcProgress progressOf(final Throwable t)
    {
        return progressOf(io.reverb.rpc.Status.fromThrowable(t));
    }

    /**
     * {@link #progressOf(Throwable)} for a status.
     *
     * @param status how a Reverb call or stream ended.
     * @return its progress.
     */
    static RpcProgress progressOf(final io.reverb.rpc.Status status)
    {
        final AttemptFailure failure = CallFailureCause.attemptFailure(status);
        switch (failure)
        {
            case PROCESSED:
                return RpcProgress.PROCESSED;
            case NOT_SENT:
                // never left this client (its connection was draining or closed when the call came): grpc-java
                // retries such a call transparently on another transport however often it happens, as for its
                // own transports shutting down; REFUSED would be retried once only
                return RpcProgress.MISCARRIED;
            default:
                return RpcProgress.REFUSED;
        }
    }

    /**
     * @param t how a Reverb call failed.
     * @return its trailers as grpc-java's (empty when there are none).
     */
    static io.grpc.Metadata trailersOf(final Throwable t)
    {
        return t instanceof RpcException ? toGrpc(((RpcException)t).trailers()) : new io.grpc.Metadata();
    }

    /**
     * @param method a grpc-java method type.
     * @return Reverb's (UNKNOWN is treated as bidi streaming, the most general).
     */
    static MethodDescriptor.MethodType toReverb(final io.grpc.MethodDescriptor.MethodType method)
    {
        switch (method)
        {
            case UNARY:
                return MethodDescriptor.MethodType.UNARY;
            case SERVER_STREAMING:
                return MethodDescriptor.MethodType.SERVER_STREAMING;
            case CLIENT_STREAMING:
                return MethodDescriptor.MethodType.CLIENT_STREAMING;
            default:
                return MethodDescriptor.MethodType.BIDI_STREAMING;
        }
    }

    /**
     * @param fullMethodName {@code "package.Service/Method"}.
     * @param type           grpc-java's method type.
     * @return a Reverb descriptor whose messages are grpc-java's serialized streams.
     */
    static MethodDescriptor<InputStream, InputStream> descriptor(
        final String fullMethodName, final io.grpc.MethodDescriptor.MethodType type)
    {
        return MethodDescriptor.<InputStream, InputStream>newBuilder()
            .fullMethodName(fullMethodName)
            .type(toReverb(type))
            .requestMarshaller(Payload.MARSHALLER)
            .responseMarshaller(Payload.MARSHALLER)
            .build();
    }
    // CHECKSTYLE.ON: InlineFullyQualifiedName
}
