package io.reverb.rpc;

import io.reverb.rpc.compression.Codec;
import io.reverb.rpc.compression.CodecRegistry;
import java.time.Duration;
import java.util.Objects;
import reactor.util.context.ContextView;

/**
 * Per-call settings: deadline, extra request metadata, wait-for-ready. Immutable; the {@code with*} methods
 * return copies, so a stub can hold one and derive others.
 */
public final class CallOptions
{
    /** No deadline, no metadata, fail fast. */
    public static final CallOptions DEFAULT = new CallOptions(null, null, false);

    private final Deadline deadline;
    private final Metadata metadata;
    private final boolean waitForReady;
    private final boolean detached;
    private final String compression;
    private final Codec compressor;

    private CallOptions(final Deadline deadline, final Metadata metadata, final boolean waitForReady)
    {
        this(deadline, metadata, waitForReady, false);
    }

    private CallOptions(final Deadline deadline, final Metadata metadata, final boolean waitForReady, final boolean detached)
    {
        this(deadline, metadata, waitForReady, detached, null, null);
    }

    private CallOptions(final Deadline deadline, final Metadata metadata, final boolean waitForReady,
        final boolean detached, final String compression, final Codec compressor)
    {
        this.deadline = deadline;
        this.metadata = metadata;
        this.waitForReady = waitForReady;
        this.detached = detached;
        this.compression = compression;
        this.compressor = compressor;
    }

    /**
     * Compresses this call's request messages of at least the channel's {@code minCompressionSize} with the codec of
     * that name in the channel's {@link io.reverb.rpc.compression.CodecRegistry} (as grpc-java's
     * {@code withCompression}); a name the registry lacks fails the call with INTERNAL when it starts.
     * {@code "identity"} sends this call uncompressed whatever the channel's default.
     *
     * @param codecName "gzip", "identity", or a registered codec's name.
     * @return a copy with the codec set.
     */
    public CallOptions withCompression(final String codecName)
    {
        return new CallOptions(deadline, metadata, waitForReady, detached,
            CodecRegistry.checkName(codecName), null);
    }

    /**
     * Like {@link #withCompression(String)}, with a codec object that need not be in the channel's registry (the
     * server must still have one of its name).
     *
     * @param codec the codec.
     * @return a copy with the codec set.
     */
    public CallOptions withCompression(final Codec codec)
    {
        return new CallOptions(deadline, metadata, waitForReady, detached,
            CodecRegistry.checkName(Objects.requireNonNull(codec, "codec").name()), codec);
    }

    /**
     * @return the codec name this call compresses with, null for the channel's default.
     */
    public String compression()
    {
        return compression;
    }

    /**
     * @return the codec given to {@link #withCompression(Codec)}, or null (then {@link #compression()} is looked up in
     * the channel's registry).
     */
    public Codec compressor()
    {
        return compressor;
    }

    /**
     * A call made inside a handler inherits the handled call's remaining deadline (when earlier than its own) and is
     * cancelled when the handled call ends early (see {@link RpcContext}); this copy opts out of both: the call keeps
     * only its own deadline and lives on, e.g. a background write that must outlive the request.
     *
     * @return a copy that inherits neither the handled call's deadline nor its cancellation.
     */
    public CallOptions withoutContextPropagation()
    {
        return new CallOptions(deadline, metadata, waitForReady, true, compression, compressor);
    }

    /**
     * @return true if the call inherits neither the handled call's deadline nor its cancellation
     * ({@link #withoutContextPropagation()}).
     */
    public boolean isDetached()
    {
        return detached;
    }

    /**
     * The options a call started with this Reactor context should use: inside a handler (an {@link RpcContext} in
     * the context) the deadline becomes the earlier of this one and the handled call's, unless
     * {@link #withoutContextPropagation()}. (Cancellation is inherited by the channel, from the same context.)
     *
     * @param context the subscriber's context.
     * @return this, or a copy with the inherited deadline.
     */
    public CallOptions propagatedFrom(final ContextView context)
    {
        return detached ? this : propagatedFrom(RpcContext.from(context));
    }

    /**
     * The options a call made while handling {@code parent} should use: the deadline becomes the earlier of this
     * one and the handled call's, unless {@link #withoutContextPropagation()}.
     *
     * @param parent the handled call's context, or null.
     * @return this, or a copy with the inherited deadline.
     */
    public CallOptions propagatedFrom(final RpcContext parent)
    {
        if (detached)
        {
            return this;
        }
        final Deadline inherited = parent == null ? null : parent.deadline();
        if (inherited == null || (deadline != null && deadline.compareTo(inherited) <= 0))
        {
            return this;
        }
        return new CallOptions(inherited, metadata, waitForReady, false, compression, compressor);
    }

    /**
     * @param timeout time from now (the deadline is fixed when this is called, as in gRPC).
     * @return a copy with the deadline set.
     */
    public CallOptions withDeadlineAfter(final Duration timeout)
    {
        return withDeadline(Deadline.after(timeout));
    }

    /**
     * @param deadline the deadline, or null for none.
     * @return a copy with the deadline set.
     */
    public CallOptions withDeadline(final Deadline deadline)
    {
        return new CallOptions(deadline, metadata, waitForReady, detached, compression, compressor);
    }

    /**
     * @param extra metadata to send with the call; merged after any metadata already held.
     * @return a copy with the metadata merged.
     */
    public CallOptions withMetadata(final Metadata extra)
    {
        final Metadata merged = new Metadata();
        merged.merge(metadata);
        merged.merge(extra);
        return new CallOptions(deadline, merged, waitForReady, detached, compression, compressor);
    }

    /**
     * @return a copy that waits for the channel to connect instead of failing fast with UNAVAILABLE.
     */
    public CallOptions withWaitForReady()
    {
        return new CallOptions(deadline, metadata, true, detached, compression, compressor);
    }

    /**
     * @return a copy that fails fast with UNAVAILABLE while the channel cannot connect.
     */
    public CallOptions withoutWaitForReady()
    {
        return new CallOptions(deadline, metadata, false, detached, compression, compressor);
    }

    /**
     * @return the deadline, or null.
     */
    public Deadline deadline()
    {
        return deadline;
    }

    /**
     * @return the metadata to send (do not modify), or null when none.
     */
    public Metadata metadata()
    {
        return metadata;
    }

    /**
     * @return true if calls wait for the channel to become ready.
     */
    public boolean isWaitForReady()
    {
        return waitForReady;
    }

    @Override
    public String toString()
    {
        return "CallOptions{deadline=" + deadline + ", metadata=" + metadata + ", waitForReady=" + waitForReady +
            (detached ? ", detached" : "") + (compression != null ? ", compression=" + compression : "") + "}";
    }
}
